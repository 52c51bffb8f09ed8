// A client that closes a stream early pays what it would have paid reading to the end: the vendor bills the
// whole generation either way, so the gateway keeps reading the vendor's stream (dropping its frames) and
// settles from the vendor's own usage. Only a vendor that breaks mid-stream is settled from an estimate,
// and that estimate counts the whole request body as input (tools included), not just the messages.
// Each cut is made with a raw socket, reset the moment the named event reaches the client (as a killed client's
// is): a server that sees only a FIN notices the client's leaving at its next write, which can come after the
// vendor's usage event and hide the bug.

import { OutgoingMessage, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';
import { A_VERSION, PRICES, post, sleep } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  // Events 25 ms apart, as a vendor's are: the client's close reaches the gateway before the next event does.
  t = await startTestGateway({ simulator: { streamChunkDelayMs: 25 } });
});
afterAll(() => t?.close());

const reserved = (g: TestGateway) => g.held();

/** Runs `call`, waits until nothing is held, and returns what it cost; asserts it is charged once and the journal adds up. */
async function chargeOf(g: TestGateway, call: () => Promise<void>): Promise<bigint> {
  const before = await g.balance();
  await call();
  for (let i = 0; i < 500 && (await reserved(g)) !== 0n; i++) await sleep(20);
  expect(await reserved(g), 'a hold stayed').toBe(0n);
  const charged = before - (await g.balance());
  await sleep(200);
  expect(before - (await g.balance()), 'charged a second time').toBe(charged);
  await expectJournalAddsUp(g.gw.db, g.walletId);
  return charged;
}

/** The same call read to its end: the charge a client that stays pays. */
async function fullCharge(path: string, body: object, headers: Record<string, string> = {}): Promise<bigint> {
  return chargeOf(t, async () => {
    const res = await post(t, path, body, headers);
    expect(res.status).toBe(200);
    await res.text();
  });
}

/**
 * Sends the call on its own socket and resets the socket as soon as `marker` has arrived, checking that the
 * stream had not ended by then (the cut really is before the vendor's final usage). Resolves once closed.
 */
function cutAt(g: TestGateway, path: string, body: object, marker: string, headers: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, g.url);
    let text = '';
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${g.apiKey}`, 'content-type': 'application/json', ...headers },
      },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          if (text.includes(marker)) req.socket?.resetAndDestroy();
        });
        res.on('end', () => reject(new Error(`the stream ended before ${marker} was seen`)));
      },
    );
    req.on('close', () => (text.includes(marker) ? resolve(text) : reject(new Error(`closed before ${marker}: ${text.slice(0, 300)}`))));
    req.on('error', () => undefined);
    req.end(JSON.stringify(body));
  });
}

/** 100 KB of function definitions: input the vendor counts and bills. */
const BIG_TOOLS = Array.from({ length: 50 }, (_, i) => ({
  type: 'function',
  function: {
    name: `tool_${i}`,
    description: `Tool ${i}: ${'d'.repeat(1900)}`,
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
  },
}));

describe('a client that closes the stream once the answer is complete pays the whole call', () => {
  it('chat door, vendor B with 20k hidden reasoning tokens, closed on finish_reason', async () => {
    const body = {
      model: 'b-5',
      stream: true,
      messages: [{ role: 'user', content: 'q [[sim:long=50]] [[sim:usage reasoning=20000]]' }],
      max_completion_tokens: 30000,
    };
    const full = await fullCharge('/v1/chat/completions', body);
    expect(full).toBeGreaterThanOrEqual(nanoOf(20_000, PRICES['b-5'].output));
    const cut = await chargeOf(t, async () => {
      const seen = await cutAt(t, '/v1/chat/completions', body, '"finish_reason":"stop"');
      expect(seen).not.toContain('[DONE]');
    });
    expect(cut).toBe(full);
  });

  it('responses door, vendor B with 20k reasoning tokens, closed on response.output_text.done', async () => {
    const body = { model: 'b-5', stream: true, input: 'q [[sim:long=50]] [[sim:usage reasoning=20000]]', max_output_tokens: 30000 };
    const full = await fullCharge('/v1/responses', body);
    const cut = await chargeOf(t, async () => {
      const seen = await cutAt(t, '/v1/responses', body, 'event: response.output_text.done');
      expect(seen).not.toContain('response.completed');
    });
    expect(cut).toBe(full);
  });

  it('messages door, a-small-4.5 with thinking, closed when the text block stops', async () => {
    const body = {
      model: 'a-small-4.5',
      stream: true,
      max_tokens: 8000,
      messages: [{ role: 'user', content: 'q [[sim:thinking]] [[sim:long=50]] [[sim:usage reasoning=20000]]' }],
    };
    const full = await fullCharge('/v1/messages', body, A_VERSION);
    const cut = await chargeOf(t, async () => {
      const seen = await cutAt(t, '/v1/messages', body, '{"type":"content_block_stop","index":1}', A_VERSION);
      expect(seen).not.toContain('message_delta');
    });
    expect(cut).toBe(full);
  });

  it('chat door, vendor B with 100 KB of tools, closed on finish_reason', async () => {
    const body = { model: 'b-5', stream: true, tools: BIG_TOOLS, messages: [{ role: 'user', content: 'q [[sim:long=50]]' }] };
    expect(JSON.stringify(BIG_TOOLS).length).toBeGreaterThan(100_000);
    const full = await fullCharge('/v1/chat/completions', body);
    const cut = await chargeOf(t, () => cutAt(t, '/v1/chat/completions', body, '"finish_reason":"stop"').then(() => undefined));
    expect(cut).toBe(full);
  });

  it('a client that leaves before the first byte pays the whole call too', async () => {
    const body = { model: 'b-5', stream: true, messages: [{ role: 'user', content: 'q [[sim:long=20]] [[sim:usage reasoning=20000]]' }] };
    const full = await fullCharge('/v1/chat/completions', body);
    t.sim.inject('b0', { kind: 'delay', ms: 300 });
    const cut = await chargeOf(t, async () => {
      const ac = new AbortController();
      const pending = post(t, '/v1/chat/completions', body, {}, ac.signal).catch(() => undefined);
      for (let i = 0; i < 50 && (await reserved(t)) === 0n; i++) await sleep(10);
      expect(await reserved(t)).toBeGreaterThan(0n);
      ac.abort();
      await pending;
    });
    expect(cut).toBe(full);
  });

  it('frames of a stream read on after its client left are dropped, never written', async () => {
    const writesAfterClose: string[] = [];
    const write = OutgoingMessage.prototype.write;
    const spy = vi.spyOn(OutgoingMessage.prototype, 'write').mockImplementation(function (this: OutgoingMessage, ...args: any[]) {
      const req = (this as OutgoingMessage & { req?: { url?: string } }).req;
      // The simulator answers under /r/<route>; the gateway's own answers are the /v1/ paths.
      if (req?.url?.startsWith('/v1/') && (this.destroyed || this.socket?.destroyed)) writesAfterClose.push(String(args[0]).slice(0, 80));
      return (write as (...a: unknown[]) => boolean).apply(this, args);
    });
    try {
      const body = { model: 'b-5', stream: true, messages: [{ role: 'user', content: 'q [[sim:long=60]]' }] };
      await chargeOf(t, () => cutAt(t, '/v1/chat/completions', body, '"content":"word3 "').then(() => undefined));
    } finally {
      spy.mockRestore();
    }
    expect(writesAfterClose).toEqual([]);
  });
});

describe('a vendor that breaks mid-stream', () => {
  it('with 100 KB of tools: charged at least the input estimate of the whole body, once, nothing held', async () => {
    const body = { model: 'b-5', stream: true, tools: BIG_TOOLS, messages: [{ role: 'user', content: 'q [[sim:long=50]]' }] };
    const calls = t.received('b').length;
    t.sim.inject('b0', { kind: 'stream-error', afterEvents: 5 });
    let held = 0n;
    const charged = await chargeOf(t, async () => {
      const res = await post(t, '/v1/chat/completions', body);
      expect(res.status).toBe(200);
      held = await t.held();
      const text = await res.text();
      expect(text).not.toContain('[DONE]');
    });
    // The whole body the client sent (tools, messages, parameters) counts as input, at b-5's input price: at
    // least a quarter of its characters.
    const bodyEstimate = nanoOf(Math.ceil(JSON.stringify(body).length / 4), PRICES['b-5'].input);
    expect(charged).toBeGreaterThanOrEqual(bodyEstimate);
    expect(charged).toBeLessThanOrEqual(held);
    expect(t.received('b').length - calls, 'asked the vendor again').toBe(1);
  });

  it('an inline image counts as an image in the estimate, not as its base64 text', async () => {
    const dataUri = `data:image/png;base64,${'A'.repeat(400_000)}`;
    const body = {
      model: 'b-5',
      stream: true,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'q [[sim:long=50]]' },
            { type: 'image_url', image_url: { url: dataUri } },
          ],
        },
      ],
    };
    t.sim.inject('b0', { kind: 'stream-error', afterEvents: 5 });
    const charged = await chargeOf(t, async () => {
      const res = await post(t, '/v1/chat/completions', body);
      expect(res.status).toBe(200);
      await res.text();
    });
    const B = PRICES['b-5'];
    expect(charged).toBeGreaterThanOrEqual(nanoOf(1600, B.input));
    expect(charged).toBeLessThan(nanoOf(dataUri.length / 4, B.input));
  });

  it('on the responses door with 100 KB of tools: the tools count as input too', async () => {
    const tools = BIG_TOOLS.map((x) => ({ type: 'function', ...x.function }));
    const body = { model: 'b-5', stream: true, tools, input: 'q [[sim:long=50]]' };
    t.sim.inject('b0', { kind: 'stream-error', afterEvents: 5 });
    const charged = await chargeOf(t, async () => {
      const res = await post(t, '/v1/responses', body);
      expect(res.status).toBe(200);
      expect(await res.text()).not.toContain('response.completed');
    });
    expect(charged).toBeGreaterThanOrEqual(nanoOf(Math.ceil(JSON.stringify(body).length / 4), PRICES['b-5'].input));
  });
});

describe('reading on after the client left is bounded by the call time limit', () => {
  let tree: TempTree;
  let slow: TestGateway;
  beforeAll(async () => {
    tree = tempCatalogTree();
    tree.edit('config/limits.yaml', (text) => text.replace(/ {2}chat: 300000/, '  chat: 800'));
    slow = await startTestGateway({ dirs: tree, routesPerVendor: 1, simulator: { streamChunkDelayMs: 20 } });
  });
  afterAll(async () => {
    await slow?.close();
    tree?.remove();
  });

  it('a vendor still streaming at the limit is cut there and the call settled from the estimate', async () => {
    const body = { model: 'b-5', stream: true, tools: BIG_TOOLS, messages: [{ role: 'user', content: 'q [[sim:long=400]]' }] };
    const started = Date.now();
    const charged = await chargeOf(slow, () => cutAt(slow, '/v1/chat/completions', body, '"content":"word2 "').then(() => undefined));
    expect(Date.now() - started).toBeLessThan(4000);
    expect(charged).toBeGreaterThanOrEqual(nanoOf(Math.ceil(JSON.stringify(BIG_TOOLS).length / 4), PRICES['b-5'].input));
  });
});

/** tokens × price per 1M tokens, in nano-USD, rounded up. */
function nanoOf(tokens: number, perMtok: number): bigint {
  return BigInt(Math.ceil(tokens * perMtok * 1000));
}
