// The gaps a second attack on issue 39 found in how a key's limits hold: a foreign output field kept the daily
// lowering of the default away, an output limit above the model's maximum was taken, a server-side tool loop was
// held for one pass (a remote MCP server's and a tool search's too) and a compaction for none. Over loopback HTTP against an in-process gateway and its
// simulator; the simulator's `[[sim:usage …]]` tag stands for what a vendor would bill.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_OPEN_TO_LOOPBACK, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ env: { ...METRICS_OPEN_TO_LOOPBACK } });
});
afterAll(() => t?.close());

interface Key {
  key: string;
  walletId: string;
}

async function keyWith(opts: { credits?: number; dailyLimitCredits?: number } = {}): Promise<Key> {
  const wallet = await t.gw.ledger.createWallet({ credits: opts.credits ?? 100_000_000 });
  const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'limited', ...opts });
  return { key, walletId: wallet.id };
}

function post(k: Key, path: string, body: unknown) {
  return fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
}

async function dayUsed(k: Key): Promise<number> {
  const res = await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${k.key}` } });
  return ((await res.json()) as any).day.used_credits;
}

describe("a foreign output field does not keep the default from fitting the key's day", () => {
  it('max_output_tokens (the responses field) on the chat door: the default is still lowered to the day', async () => {
    const k = await keyWith({ dailyLimitCredits: 1000 });
    const res = await post(k, '/v1/chat/completions', {
      model: 'b-6',
      max_output_tokens: 100_000, // not a chat-completions field: the vendor ignores it
      messages: [{ role: 'user', content: 'Say a lot. [[sim:long=3000]]' }],
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const written = Number(res.headers.get('x-service-max-tokens'));
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(200);
    await res.json();
    expect(await dayUsed(k)).toBeLessThanOrEqual(1000);
  });
});

describe("an output limit above the model's maximum output is a 400 naming it, before anything is held", () => {
  const cases = [
    ['/v1/messages', { model: 'a-top-5', max_tokens: 40_000, messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens', 32000],
    [
      '/v1/chat/completions',
      { model: 'b-6', max_completion_tokens: 200_000, messages: [{ role: 'user', content: 'hi' }] },
      'max_completion_tokens',
      128000,
    ],
    ['/v1/chat/completions', { model: 'a-top-5', max_tokens: 40_000, messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens', 32000],
    ['/v1/responses', { model: 'b-pro-5', max_output_tokens: 200_000, input: 'hi' }, 'max_output_tokens', 128000],
  ] as const;

  it.each(cases)('%s %o', async (path, body, field, most) => {
    const k = await keyWith({ credits: 1_000_000_000 });
    const sent = t.sim.received.length;
    const res = await post(k, path, body);
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBe(400);
    const error = path === '/v1/messages' ? (expect(json.type).toBe('error'), json.error) : json.error;
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toContain(field);
    expect(error.message).toContain(String(most));
    if (path !== '/v1/messages') expect(error.param).toBe(field);
    expect(t.sim.received.length).toBe(sent);
    expect(await dayUsed(k)).toBe(0);
  });

  it("the chat door's default for vendor A (8192) never asks more than the model writes", async () => {
    const k = await keyWith();
    const res = await post(k, '/v1/chat/completions', { model: 'a-small-3.5', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.json();
    const sent = t
      .received('a')
      .filter((r) => r.path === '/v1/messages')
      .at(-1)?.body as any;
    expect(sent.max_tokens).toBe(4096); // a-small-3.5's max_output
  });

  it('the simulator refuses it too, as the vendor does', async () => {
    const res = await fetch(`${t.sim.routeUrl('a0')}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'vendor-a-secret', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a-top-5', max_tokens: 40_000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const json = (await res.json()) as any;
    expect(res.status).toBe(400);
    expect(json.error.message).toContain('32000');
    const chat = await fetch(`${t.sim.routeUrl('b0')}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer vendor-b-secret', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-6', max_completion_tokens: 200_000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(chat.status).toBe(400);
  });
});

/** Calls of `vendor` whose reported usage went above their hold, from /metrics. */
async function aboveHold(vendor: string): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`gateway_usage_above_hold_total{vendor="${vendor}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('a server-side tool loop is held for every pass it may run', () => {
  // Three searches are four passes: each reads the prompt again with the result pages so far (20,000 tokens a
  // search, reservation.search_result_tokens), about 120,000 input tokens in all ($0.60 on a-top-5.5). The hold
  // used to count the pages once (60,000 tokens).
  const searching = (k: Key) =>
    post(k, '/v1/messages', {
      model: 'a-top-5.5',
      max_tokens: 16,
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
      messages: [{ role: 'user', content: 'look it up [[sim:web_search=3]] [[sim:usage input=120000 output=16]]' }],
    });

  it('a wallet that covers one pass but not four is refused before the vendor is called', async () => {
    const k = await keyWith({ credits: 500_000 }); // $0.50
    const sent = t.sim.received.length;
    const res = await searching(k);
    expect(res.status, await res.clone().text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
    expect(await dayUsed(k)).toBe(0);
  });

  it("the four passes' bill stays within the hold", async () => {
    const k = await keyWith();
    const before = await aboveHold('a');
    const res = await searching(k);
    expect(res.status, await res.clone().text()).toBe(200);
    await res.json();
    expect(await aboveHold('a')).toBe(before);
    expect(await dayUsed(k)).toBeGreaterThanOrEqual(630_000); // 120,000 × $5 + 3 × $0.01, in credits
  });
});

describe('a remote MCP server and tool search loop like server tools: every pass they may run is held', () => {
  // Each MCP call's result re-enters the prompt at a size its server decides: every pass may fill the window.
  // On /v1/responses the calls are capped by max_tool_calls (the built-in tools' cap, written as 10 when the body
  // sends none); on /v1/messages nothing in the body caps them, and vendor A's loop pauses after 10
  // (billing.yaml reservation.uncapped_loop_calls). Before, the hold counted one pass.
  const mcpResponses = (k: Key, usage: string, cap?: number) =>
    post(k, '/v1/responses', {
      model: 'b-6',
      max_output_tokens: 16,
      ...(cap ? { max_tool_calls: cap } : {}),
      tools: [{ type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com/sse', require_approval: 'never' }],
      input: `look it up ${usage}`,
    });
  const mcpMessages = (k: Key, usage: string) =>
    post(k, '/v1/messages', {
      model: 'a-top-5.5',
      max_tokens: 16,
      mcp_servers: [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'docs' }],
      messages: [{ role: 'user', content: `look it up ${usage}` }],
    });
  // A tool search loads the body's deferred tools again at each of its calls: each pass reads the prompt again.
  const searchingTools = (k: Key, usage: string) =>
    post(k, '/v1/messages', {
      model: 'a-top-5.5',
      max_tokens: 16,
      tools: [
        { type: 'tool_search_tool_regex_20251119', name: 'tool_search' },
        { name: 'lookup', description: 'x'.repeat(100_000), input_schema: { type: 'object', properties: {} }, defer_loading: true },
      ],
      messages: [{ role: 'user', content: `find a tool ${usage}` }],
    });

  it('responses mcp with max_tool_calls 3: a wallet that covers one pass of the window but not four is refused, nothing sent', async () => {
    const k = await keyWith({ credits: 4_000_000 }); // $4: one pass of b-6's 400,000-token window is $2, four are $8
    const sent = t.sim.received.length;
    const res = await mcpResponses(k, '', 3);
    expect(res.status, await res.clone().text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
    expect(await dayUsed(k)).toBe(0);
  });

  it('responses mcp: four passes of the window are within the hold; a body without a cap is sent max_tool_calls 10', async () => {
    const k = await keyWith();
    const before = await aboveHold('b');
    const res = await mcpResponses(k, '[[sim:usage input=1600000 output=16]]', 3);
    expect(res.status, await res.clone().text()).toBe(200);
    await res.json();
    expect(await aboveHold('b')).toBe(before);
    const uncapped = await mcpResponses(k, '');
    expect(uncapped.status, await uncapped.clone().text()).toBe(200);
    await uncapped.json();
    expect((t.received('b').at(-1)?.body as { max_tool_calls?: number } | undefined)?.max_tool_calls).toBe(10);
  });

  it("messages mcp_servers: held for the vendor's 10 calls and the first pass, each of the window", async () => {
    const poor = await keyWith({ credits: 5_000_000 }); // $5: one pass of a-top-5.5's 200,000 tokens is $1, eleven $11
    const sent = t.sim.received.length;
    const refused = await mcpMessages(poor, '');
    expect(refused.status, await refused.clone().text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
    const k = await keyWith();
    const before = await aboveHold('a');
    const res = await mcpMessages(k, '[[sim:usage input=2200000 output=16]]');
    expect(res.status, await res.clone().text()).toBe(200);
    await res.json();
    expect(await aboveHold('a')).toBe(before);
  });

  it('messages tool search: each of its calls is held as another pass over the prompt', async () => {
    // The prompt is about 100,000 tokens ($0.50 a pass); eleven passes are about $5.50.
    const poor = await keyWith({ credits: 2_000_000 });
    const sent = t.sim.received.length;
    const refused = await searchingTools(poor, '');
    expect(refused.status, await refused.clone().text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
    const k = await keyWith();
    const before = await aboveHold('a');
    const res = await searchingTools(k, '[[sim:usage input=1100000 output=16]]');
    expect(res.status, await res.clone().text()).toBe(200);
    await res.json();
    expect(await aboveHold('a')).toBe(before);
  });
});

describe('a compaction edit is held for the summarising passes it may run', () => {
  const compacting = (k: Key) =>
    post(k, '/v1/messages', {
      model: 'a-top-5.5',
      max_tokens: 16,
      context_management: { edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: 1 } }] },
      messages: [{ role: 'user', content: 'carry on' }],
    });

  it('a wallet that covers the answer but not a summary of the model’s whole output is refused, nothing sent', async () => {
    const k = await keyWith({ credits: 100_000 }); // $0.10: the answer alone holds about $0.02
    const sent = t.sim.received.length;
    const res = await compacting(k);
    expect(res.status, await res.clone().text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
  });

  it('the compaction the vendor runs is charged, within the hold', async () => {
    const k = await keyWith();
    const before = await aboveHold('a');
    const res = await compacting(k);
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as any;
    expect(body.usage.iterations?.[0]?.type).toBe('compaction');
    expect(await aboveHold('a')).toBe(before);
  });
});

describe('an inline PDF is held as the vendor bills it: per page, not by its bytes', () => {
  // Sixty bare pages in under 2 KB: the vendor bills each page's text and image (the simulator 3,000 tokens a
  // page), 180,000 tokens, $0.90 on a-top-5.5. The hold counted the base64 bytes, about $0.02.
  const pdf = Buffer.from(`%PDF-1.4\n${'1 0 obj <</Type /Page>> endobj\n'.repeat(60)}%%EOF\n`).toString('base64');
  const withPdf = (k: Key) =>
    post(k, '/v1/messages', {
      model: 'a-top-5.5',
      max_tokens: 16,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
            { type: 'text', text: 'summarise' },
          ],
        },
      ],
    });

  it('a wallet that covers its bytes but not its pages is refused before the vendor is called', async () => {
    const k = await keyWith({ credits: 500_000 });
    const sent = t.sim.received.length;
    const res = await withPdf(k);
    expect(res.status, await res.clone().text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
  });

  it('on every door the pages billed stay within the hold', async () => {
    const k = await keyWith();
    const before = { a: await aboveHold('a'), b: await aboveHold('b') };
    const a = await withPdf(k);
    expect(a.status, await a.clone().text()).toBe(200);
    expect(((await a.json()) as any).usage.input_tokens).toBeGreaterThanOrEqual(180_000);
    const b = await post(k, '/v1/responses', {
      model: 'b-6',
      max_output_tokens: 16,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_file', filename: 'a.pdf', file_data: `data:application/pdf;base64,${pdf}` },
            { type: 'input_text', text: 'summarise' },
          ],
        },
      ],
    });
    expect(b.status, await b.clone().text()).toBe(200);
    expect(((await b.json()) as any).usage.input_tokens).toBeGreaterThanOrEqual(180_000);
    expect(await aboveHold('a')).toBe(before.a);
    expect(await aboveHold('b')).toBe(before.b);
  });
});

describe('a cache write kept an hour is charged, and held, at its own price', () => {
  // a-top-5.5: input $5, a 5-minute cache write $6.25, a 1-hour one $10 per 1M tokens (catalog/vendor-a.yaml).
  const nano = (tokens: number, perMtok: number) => BigInt(Math.ceil((tokens * perMtok * 1e9) / 1e6));
  const cached = (k: Key, text: string, ttl?: string) =>
    post(k, '/v1/messages', {
      model: 'a-top-5.5',
      max_tokens: 16,
      system: [{ type: 'text', text, cache_control: { type: 'ephemeral', ...(ttl ? { ttl } : {}) } }],
      messages: [{ role: 'user', content: 'go [[sim:usage input=10 cache_write=100000 output=5]]' }],
    });

  it('charged at the 1-hour price, and the record says so', async () => {
    const k = await keyWith();
    const res = await cached(k, 'context', '1h');
    expect(res.status, await res.clone().text()).toBe(200);
    await res.json();
    expect(BigInt(res.headers.get('x-service-charged-nano') ?? '0')).toBe(nano(10, 5) + nano(100_000, 10) + nano(5, 25));
    const id = res.headers.get('x-request-id');
    const record = (await (await fetch(`${t.url}/v1/generations/${id}`, { headers: { authorization: `Bearer ${k.key}` } })).json()) as any;
    expect(record.prices.cache_write_1h).toEqual({ tokens: 100_000, usd: 10 });
    const fiveMinutes = await cached(k, 'context');
    await fiveMinutes.json();
    expect(BigInt(fiveMinutes.headers.get('x-service-charged-nano') ?? '0')).toBe(nano(10, 5) + nano(100_000, 6.25) + nano(5, 25));
  });

  it('held at the 1-hour price: a wallet that covers the 5-minute write of the prompt is refused, nothing sent', async () => {
    // About 100,000 bytes of prompt: held $0.63 at the 5-minute price, $1.00 at the 1-hour one.
    const k = await keyWith({ credits: 800_000 });
    const sent = t.sim.received.length;
    const res = await cached(k, 'lorem '.repeat(16_700), '1h');
    expect(res.status, await res.clone().text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
    const fiveMinutes = await cached(k, 'lorem '.repeat(16_700));
    expect(fiveMinutes.status, await fiveMinutes.clone().text()).toBe(200);
    await fiveMinutes.json();
  });
});
