// Attack (issue 8 sign-off): a client asks the vendor for work the hold does not cover, on a wallet that
// covers the hold but not the work, so the settle can charge only what the balance has left and the rest of
// the vendor's bill goes unpaid. Each case must be refused (or held in full) before the vendor is called.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A_VERSION, post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ credits: 20_000 }); // $0.02
});
afterAll(() => t?.close());

async function expectRefusedUnsent(res: Response, status: number): Promise<any> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return JSON.parse(text);
}

describe('options the vendor bills above the catalog price are refused on /v1/messages', () => {
  // Repro before the fix (npm start, a wallet of 1,100,000 credits): 1.2 MB of text to a-top-5.5 with
  // `anthropic-beta: context-1m-2025-08-07`: the hold stopped at the 200,000-token window, the vendor billed
  // 300,000 input tokens ($1.500025) and $1.10 was charged: $0.400025 of vendor work unpaid (and the real
  // vendor bills the part past 200K at its long-context premium on top).
  it('the context-1m beta header: 400 naming it, nothing sent, nothing charged', async () => {
    const before = await t.balance();
    const sent = t.sim.received.length;
    const res = await post(
      t,
      '/v1/messages',
      { model: 'a-top-5', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] },
      {
        ...A_VERSION,
        'anthropic-beta': 'prompt-caching-2024-07-31,context-1m-2025-08-07',
      },
    );
    const body = await expectRefusedUnsent(res, 400);
    expect(body.type).toBe('error');
    expect(body.error.message).toMatch(/context-1m/);
    expect(t.sim.received.length).toBe(sent);
    expect(await t.balance()).toBe(before);
  });

  // US-only inference is billed at a multiplier of the list price (1.1x) that the catalog has no figure for.
  it('inference_geo other than global: 400 naming it, nothing sent; global is served', async () => {
    const sent = t.sim.received.length;
    const us = await post(
      t,
      '/v1/messages',
      { model: 'a-top-5', max_tokens: 1, inference_geo: 'us', messages: [{ role: 'user', content: 'hi' }] },
      A_VERSION,
    );
    const body = await expectRefusedUnsent(us, 400);
    expect(body.error.message).toMatch(/inference_geo/);
    expect(t.sim.received.length).toBe(sent);
    const global = await post(
      t,
      '/v1/messages',
      { model: 'a-top-5', max_tokens: 1, inference_geo: 'global', messages: [{ role: 'user', content: 'hi' }] },
      A_VERSION,
    );
    expect(global.status, await global.text()).toBe(200);
  });
});

describe('a remote MCP server feeds the prompt at a size the body does not show: held at the context window', () => {
  // Before the fix these were served on $0.02: the hold counted the body's bytes, while the vendor bills the
  // server's tool list and every tool result (sized by whoever runs the server) as input.
  const cases: [string, string, Record<string, unknown>, Record<string, string>][] = [
    [
      'responses: an mcp tool',
      '/v1/responses',
      {
        model: 'b-5',
        max_output_tokens: 16,
        input: 'use the tool',
        tools: [{ type: 'mcp', server_label: 'x', server_url: 'https://mcp.example.com/mcp', require_approval: 'never' }],
      },
      {},
    ],
    [
      'messages: the mcp_servers connector',
      '/v1/messages',
      {
        model: 'a-top-5',
        max_tokens: 1,
        mcp_servers: [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'x' }],
        messages: [{ role: 'user', content: 'use the tool' }],
      },
      { ...A_VERSION, 'anthropic-beta': 'mcp-client-2025-04-04' },
    ],
  ];
  for (const [name, path, body, headers] of cases) {
    it(`${name}: 402 on a 20,000-credit wallet, nothing sent or held`, async () => {
      const before = await t.balance();
      const sent = t.sim.received.length;
      await expectRefusedUnsent(await post(t, path, body, headers), 402);
      expect(t.sim.received.length).toBe(sent);
      expect(await t.balance()).toBe(before);
    });
  }

  it('an empty mcp_servers list pulls nothing in and is served', async () => {
    const res = await post(
      t,
      '/v1/messages',
      { model: 'a-top-5', max_tokens: 1, mcp_servers: [], messages: [{ role: 'user', content: 'hi' }] },
      A_VERSION,
    );
    expect(res.status, await res.text()).toBe(200);
  });
});

describe('a stored conversation the vendor replays enters the prompt unseen: held at the context window', () => {
  // Found by this session's attack helper: with previous_response_id, conversation or a stored prompt by id the
  // vendor replays what it stored (up to the whole window) as input, while the hold counted only the id's bytes.
  // A stored prompt is now refused before the hold: no prompt is a wallet's (config/doors.yaml).
  const base = { model: 'b-5', max_output_tokens: 16, input: 'go on' };
  // A name the wallet's own calls stored (issue 39: another wallet's, or one never made, is a 404 before this).
  let own = '';
  beforeAll(async () => {
    own = ((await (await post(t, '/v1/responses', { model: 'b-5', max_output_tokens: 16, input: 'hi' })).json()) as { id: string }).id;
  });
  const cases: [string, () => Record<string, unknown>][] = [['previous_response_id', () => ({ previous_response_id: own })]];
  for (const [name, extra] of cases) {
    it(`${name}: 402 on a 20,000-credit wallet, nothing sent or held`, async () => {
      const before = await t.balance();
      const sent = t.sim.received.length;
      await expectRefusedUnsent(await post(t, '/v1/responses', { ...base, ...extra() }), 402);
      expect(t.sim.received.length).toBe(sent);
      expect(await t.balance()).toBe(before);
    });
  }
  it('a stored prompt by id: 400 naming prompt.id, nothing sent or held', async () => {
    const before = await t.balance();
    const sent = t.sim.received.length;
    const res = await post(t, '/v1/responses', { ...base, prompt: { id: 'pmpt_0123456789abcdef', version: '2' } });
    expect((await expectRefusedUnsent(res, 400)).error.param).toBe('prompt.id');
    expect(t.sim.received.length).toBe(sent);
    expect(await t.balance()).toBe(before);
  });
  // The gateway makes no conversations, so none is the wallet's (issue 39): refused before the hold is counted.
  for (const conversation of ['conv_0123456789abcdef', { id: 'conv_0123456789abcdef' }]) {
    it(`conversation ${JSON.stringify(conversation)}: 404, nothing sent or held`, async () => {
      const before = await t.balance();
      const sent = t.sim.received.length;
      await expectRefusedUnsent(await post(t, '/v1/responses', { ...base, conversation }), 404);
      expect(t.sim.received.length).toBe(sent);
      expect(await t.balance()).toBe(before);
    });
  }

  it('control: the same call without them is served on the same wallet', async () => {
    const res = await post(t, '/v1/responses', { ...base, previous_response_id: null });
    expect(res.status, await res.text()).toBe(200);
  });
});

describe('several answers generated, fewer returned: refused on the chat door', () => {
  // Found by this session's attack helper: open-weight servers (vendor E's kind) that take best_of or beam
  // search generate that many sequences and report the tokens of the ones returned only; the hold and the
  // charge covered one answer.
  const ask = { model: 'e-open-8b', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  for (const [name, extra] of [
    ['best_of 8', { best_of: 8 }],
    ['use_beam_search true', { use_beam_search: true }],
  ] as const) {
    it(`${name}: 400 naming it, nothing sent`, async () => {
      const sent = t.sim.received.length;
      const body = await expectRefusedUnsent(await post(t, '/v1/chat/completions', { ...ask, ...extra }), 400);
      expect(body.error.message).toContain(Object.keys(extra)[0]);
      expect(t.sim.received.length).toBe(sent);
    });
  }

  it('best_of 1 and use_beam_search false are served', async () => {
    const res = await post(t, '/v1/chat/completions', { ...ask, best_of: 1, use_beam_search: false });
    expect(res.status, await res.text()).toBe(200);
  });
});

describe('a vendor whose servers give more output than max_output unless told gets a limit no larger than it', () => {
  // Found by this session's attack helper: open-weight hosts (vendor E) default to what is left of the context
  // window when no output limit is sent, and honour one above the catalog's max_output (16,384 here); the hold
  // covered max_output. On a wallet near its end the vendor's extra output went unpaid (seen: 300,000 credits of
  // output, 60,002 charged). The chain (cap-output, config/billing.yaml reservation.output_cap_written) now sends
  // a limit at most max_output.
  const ask = { model: 'e-open-8b', messages: [{ role: 'user', content: 'hi' }] };
  for (const [name, extra, sentAs] of [
    ['no limit sent', {}, 16_384],
    ['max_tokens 100,000', { max_tokens: 100_000 }, 16_384],
    ['max_tokens 10 (kept)', { max_tokens: 10 }, 10],
  ] as const) {
    it(`${name}: the vendor is sent max_tokens ${sentAs}`, async () => {
      const res = await post(t, '/v1/chat/completions', { ...ask, ...extra });
      expect(res.status, await res.text()).toBe(200);
      expect(t.sim.received.at(-1)?.body).toMatchObject({ max_tokens: sentAs });
    });
  }

  it('a vendor the setting does not list is sent no limit it did not ask for', async () => {
    const res = await post(t, '/v1/chat/completions', { model: 'b-4.1-nano', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status, await res.text()).toBe(200);
    const sent = t.sim.received.at(-1)?.body as Record<string, unknown>;
    expect(sent).not.toHaveProperty('max_tokens');
    expect(sent).not.toHaveProperty('max_completion_tokens');
  });
});
