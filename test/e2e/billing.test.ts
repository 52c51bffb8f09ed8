// Billing end to end, in exact integer nano-USD: balance after = balance before − the catalog cost of the usage
// the simulator reported, computed here from the catalog figures (e2e.ts PRICES), not by the gateway's code.
// Then a stream cut by the client (charged once, within the reservation, nothing left held) and 402.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spendableOf } from '../../engine/money/spendable.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { A_VERSION, anthropic, nano, openai, PRICES, parseSse, post, sleep, WEB_SEARCH_NANO } from './e2e.ts';

let t: TestGateway;
/** A second wallet of the same gateway holding 1 credit (1000 nano), and its key: what startTestGateway({credits: 1})
 *  would give, without paying for a second gateway start. */
let poor: { walletId: string; apiKey: string };
beforeAll(async () => {
  t = await startTestGateway();
  const wallet = await t.gw.ledger.createWallet({ credits: 1 });
  const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'poor' });
  poor = { walletId: wallet.id, apiKey: key };
});
afterAll(() => t?.close());

/** What the wallet's calls in flight hold (their own reservations and their part of this gateway's budget leases). */
const reserved = async (g: { walletId: string }) =>
  g.walletId === t.walletId ? t.held() : (await spendableOf(t.gw.db, g.walletId)).reservedNano;

/** Runs `call`, then asserts it was charged exactly `expected`, once, and that nothing stays held. */
async function expectCharged(expected: bigint, call: () => Promise<void>) {
  const before = await t.balance();
  await call();
  expect(before - (await t.balance())).toBe(expected);
  expect(await reserved(t)).toBe(0n);
  await sleep(50);
  expect(before - (await t.balance())).toBe(expected);
  await expectJournalAddsUp(t.gw.db, t.walletId);
}

describe('exact charges from the catalog', () => {
  const A = PRICES['a-top-5.5'];
  // 1000 uncached input, 300 cache read, 100 cache write, 200 output.
  const A_TAG = '[[sim:usage input=1000 output=200 cache_read=300 cache_write=100]]';
  const A_COST = nano(1000, A.input) + nano(300, A.cache_read) + nano(100, A.cache_write) + nano(200, A.output);

  it('vendor A on the chat door, with cache read and write tokens', async () => {
    expect(A_COST).toBe(10_775_000n); // $0.010775
    await expectCharged(A_COST, async () => {
      const res = await post(t, '/v1/chat/completions', { model: 'a-top-5.5', messages: [{ role: 'user', content: `Cache me ${A_TAG}` }] });
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      // What the client is told matches what it paid for: prompt = all three input buckets.
      expect(body.usage).toMatchObject({
        prompt_tokens: 1400,
        completion_tokens: 200,
        total_tokens: 1600,
        prompt_tokens_details: { cached_tokens: 300 },
      });
    });
  });

  it('vendor A streamed on the chat door: same usage, same charge', async () => {
    await expectCharged(A_COST, async () => {
      const stream = await openai(t).chat.completions.create({
        model: 'a-top-5.5',
        stream: true,
        messages: [{ role: 'user', content: `Cache me ${A_TAG}` }],
      });
      for await (const _ of stream) void _;
    });
  });

  it('vendor A on the messages door, streamed with the native SDK: same charge', async () => {
    await expectCharged(A_COST, async () => {
      const final = await anthropic(t)
        .messages.stream({ model: 'a-top-5.5', max_tokens: 1024, messages: [{ role: 'user', content: `Cache me ${A_TAG}` }] })
        .finalMessage();
      expect(final.usage).toMatchObject({
        input_tokens: 1000,
        output_tokens: 200,
        cache_read_input_tokens: 300,
        cache_creation_input_tokens: 100,
      });
    });
  });

  const B = PRICES['b-5'];
  // prompt_tokens 1400 on the wire INCLUDES the 400 cached: 1000 uncached + 400 cached, never counted twice.
  const B_TAG = '[[sim:usage input=1000 output=200 cache_read=400]]';
  const B_COST = nano(1000, B.input) + nano(400, B.cache_read) + nano(200, B.output);

  it('vendor B on the chat door with cached tokens', async () => {
    expect(B_COST).toBe(3_300_000n);
    await expectCharged(B_COST, async () => {
      const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: `Cached ${B_TAG}` }] });
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).usage.prompt_tokens).toBe(1400);
    });
  });

  it('vendor B streamed without include_usage: the gateway still reads the hidden usage chunk', async () => {
    await expectCharged(B_COST, async () => {
      const res = await post(t, '/v1/chat/completions', {
        model: 'b-5',
        stream: true,
        messages: [{ role: 'user', content: `Cached ${B_TAG}` }],
      });
      const frames = parseSse(await res.text());
      expect(frames.some((f) => f.data?.usage)).toBe(false);
    });
  });

  it('vendor B on the responses door with cached tokens', async () => {
    await expectCharged(B_COST, async () => {
      const r = await openai(t).responses.create({ model: 'b-5', input: `Cached ${B_TAG}` });
      expect(r.usage!.input_tokens_details.cached_tokens).toBe(400);
    });
  });

  it('tiered price above 272K input on the responses door (b-pro-5.4 → 60 / 270)', async () => {
    const P = PRICES['b-pro-5.4'];
    expect(300_000).toBeGreaterThan(P.tier.above);
    const cost = nano(300_000, P.tier.input) + nano(10, P.tier.output);
    expect(cost).toBe(18_002_700_000n); // $18.0027
    await expectCharged(cost, async () => {
      const res = await post(t, '/v1/responses', { model: 'b-pro-5.4', input: 'Huge prompt [[sim:usage input=300000 output=10]]' });
      expect(res.status).toBe(200);
      await res.json();
    });
  });

  it('the same model below the threshold pays the base 30 / 180', async () => {
    const P = PRICES['b-pro-5.4'];
    const cost = nano(100_000, P.input) + nano(10, P.output);
    await expectCharged(cost, async () => {
      const res = await post(t, '/v1/responses', { model: 'b-pro-5.4', input: 'Big prompt [[sim:usage input=100000 output=10]]' });
      expect(res.status).toBe(200);
      await res.json();
    });
  });

  it('web_search on the messages door: tokens + $0.01 per search', async () => {
    const cost = nano(1000, A.input) + nano(100, A.output) + 2n * WEB_SEARCH_NANO;
    expect(cost).toBe(27_500_000n);
    await expectCharged(cost, async () => {
      const res = await post(
        t,
        '/v1/messages',
        {
          model: 'a-top-5.5',
          max_tokens: 1024,
          tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }],
          messages: [{ role: 'user', content: 'Search twice [[sim:web_search=2]] [[sim:usage input=1000 output=100]]' }],
        },
        A_VERSION,
      );
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body.usage.server_tool_use.web_search_requests).toBe(2);
    });
  });

  it('web_search streamed on the messages door: same charge', async () => {
    const cost = nano(1000, A.input) + nano(100, A.output) + 2n * WEB_SEARCH_NANO;
    await expectCharged(cost, async () => {
      const res = await post(
        t,
        '/v1/messages',
        {
          model: 'a-top-5.5',
          max_tokens: 1024,
          stream: true,
          tools: [{ type: 'web_search_20250305', name: 'web_search' }],
          messages: [{ role: 'user', content: 'Search twice [[sim:web_search=2]] [[sim:usage input=1000 output=100]]' }],
        },
        A_VERSION,
      );
      expect(res.status).toBe(200);
      await res.text();
    });
  });
});

describe('concurrent calls', () => {
  it('twelve calls at once (mixed doors, streams and fallbacks) are each charged exactly once', async () => {
    const A = PRICES['a-top-5.5'];
    const B = PRICES['b-5'];
    const aCost = nano(500, A.input) + nano(50, A.output);
    const bCost = nano(800, B.input) + nano(40, B.output);
    t.sim.inject('a0', { kind: 'status', status: 529, times: 2 });
    t.sim.inject('b0', { kind: 'reset', times: 2 });
    const before = await t.balance();
    const calls: Promise<void>[] = [];
    for (let i = 0; i < 3; i++) {
      calls.push(
        post(t, '/v1/chat/completions', {
          model: 'a-top-5.5',
          messages: [{ role: 'user', content: `a${i} [[sim:usage input=500 output=50]]` }],
        }).then(async (r) => {
          expect(r.status).toBe(200);
          await r.text();
        }),
        post(t, '/v1/chat/completions', {
          model: 'b-5',
          stream: true,
          messages: [{ role: 'user', content: `b${i} [[sim:usage input=800 output=40]]` }],
        }).then(async (r) => {
          expect(r.status).toBe(200);
          await r.text();
        }),
        post(
          t,
          '/v1/messages',
          {
            model: 'a-top-5.5',
            max_tokens: 500,
            stream: true,
            messages: [{ role: 'user', content: `m${i} [[sim:usage input=500 output=50]]` }],
          },
          A_VERSION,
        ).then(async (r) => {
          expect(r.status).toBe(200);
          await r.text();
        }),
        post(t, '/v1/responses', { model: 'b-5', input: `r${i} [[sim:usage input=800 output=40]]` }).then(async (r) => {
          expect(r.status).toBe(200);
          await r.text();
        }),
      );
    }
    await Promise.all(calls);
    t.sim.clearFaults();
    expect(before - (await t.balance())).toBe(6n * aCost + 6n * bCost);
    expect(await reserved(t)).toBe(0n);
  });
});

describe('a stream cut by the client', () => {
  /**
   * Opens a long stream, measures the hold while it runs, reads a few chunks and aborts. Returns what was
   * held and what was finally charged, once the gateway released the hold.
   */
  async function cutStream(path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const before = await t.balance();
    const ac = new AbortController();
    const res = await post(t, path, body, headers, ac.signal);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let bytes = 0;
    while (bytes < 600) {
      const { value, done } = await reader.read();
      expect(done, 'the stream ended before the client cut it').toBe(false);
      bytes += value!.length;
    }
    const held = await reserved(t);
    ac.abort();
    await reader.cancel().catch(() => undefined);
    // The gateway reads the vendor's stream on to its end and settles from the vendor's usage.
    for (let i = 0; i < 100 && (await reserved(t)) !== 0n; i++) await sleep(20);
    expect(await reserved(t)).toBe(0n);
    const charged = before - (await t.balance());
    await sleep(300);
    expect(before - (await t.balance()), 'charged a second time').toBe(charged);
    await expectJournalAddsUp(t.gw.db, t.walletId);
    return { held, charged };
  }

  it('vendor A on the chat door: charged more than 0, no more than the reservation, exactly once', async () => {
    const { held, charged } = await cutStream('/v1/chat/completions', {
      model: 'a-top-5.5',
      stream: true,
      messages: [{ role: 'user', content: 'Go on and on [[sim:long=2000]]' }],
    });
    expect(held).toBeGreaterThan(0n);
    expect(charged).toBeGreaterThan(0n);
    expect(charged).toBeLessThanOrEqual(held);
  });

  it('vendor B passthrough on the chat door (usage comes after the cut): within the reservation', async () => {
    const { held, charged } = await cutStream('/v1/chat/completions', {
      model: 'b-5',
      stream: true,
      messages: [{ role: 'user', content: 'Go on and on [[sim:long=2000]]' }],
    });
    expect(charged).toBeGreaterThan(0n);
    expect(charged).toBeLessThanOrEqual(held);
  });

  it('the messages door', async () => {
    const { held, charged } = await cutStream(
      '/v1/messages',
      { model: 'a-top-5.5', max_tokens: 8000, stream: true, messages: [{ role: 'user', content: 'Go on and on [[sim:long=2000]]' }] },
      A_VERSION,
    );
    expect(charged).toBeGreaterThan(0n);
    expect(charged).toBeLessThanOrEqual(held);
  });

  it('the responses door', async () => {
    const { held, charged } = await cutStream('/v1/responses', { model: 'b-5', stream: true, input: 'Go on and on [[sim:long=2000]]' });
    expect(charged).toBeGreaterThan(0n);
    expect(charged).toBeLessThanOrEqual(held);
  });
});

describe('a non-streaming call abandoned by the client', () => {
  it("runs to its end at the vendor and is charged once for the vendor's work; no hold stays", async () => {
    const before = await t.balance();
    const n = t.received('a').length;
    t.sim.inject('a0', { kind: 'delay', ms: 400 });
    const ac = new AbortController();
    const pending = post(
      t,
      '/v1/chat/completions',
      { model: 'a-top-5.5', messages: [{ role: 'user', content: 'Slow one [[sim:usage input=100 output=20]]' }] },
      {},
      ac.signal,
    );
    for (let i = 0; i < 50 && (await reserved(t)) === 0n; i++) await sleep(10);
    expect(await reserved(t)).toBeGreaterThan(0n);
    ac.abort();
    await pending.catch(() => undefined);
    for (let i = 0; i < 100 && (await reserved(t)) !== 0n; i++) await sleep(20);
    expect(await reserved(t)).toBe(0n);
    // 100 input × $5/M + 20 output × $25/M, exactly once.
    expect(before - (await t.balance())).toBe(1_000_000n);
    await sleep(300);
    expect(before - (await t.balance())).toBe(1_000_000n);
    expect(t.received('a').length - n).toBe(1);
  });
});

describe('402 insufficient_credit', () => {
  const cases: [string, Record<string, unknown>, Record<string, string>, 'chat' | 'messages'][] = [
    ['/v1/chat/completions', { model: 'a-top-5.5', messages: [{ role: 'user', content: 'hi' }] }, {}, 'chat'],
    ['/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 1 }, {}, 'chat'],
    ['/v1/messages', { model: 'a-top-5.5', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }, A_VERSION, 'messages'],
    ['/v1/responses', { model: 'b-5', input: 'hi' }, {}, 'chat'],
  ];
  for (const [path, body, headers, shape] of cases) {
    it(`${path} (${body.model}): refused before any vendor call, nothing charged`, async () => {
      const poorBalance = async () => (await t.gw.ledger.balance(poor.walletId)).availableNano;
      const before = await poorBalance();
      expect(before).toBe(1000n); // 1 credit
      const sent = t.sim.received.length;
      const res = await post({ ...t, apiKey: poor.apiKey }, path, body, headers);
      expect(res.status).toBe(402);
      const err = (await res.json()) as any;
      if (shape === 'messages') {
        expect(err.type).toBe('error');
        expect(err.error.type).toBe('insufficient_credit');
      } else {
        expect(err.error.type).toBe('insufficient_credit');
      }
      expect(t.sim.received.length, 'a vendor was called').toBe(sent);
      expect(await poorBalance()).toBe(before);
      expect(await reserved(poor)).toBe(0n);
    });
  }
});

describe('the reservation follows max_tokens', () => {
  it('a wallet of $0.02: refused with max_tokens 8192 sent, served with max_tokens 100, and without one at what fits', async () => {
    const wallet = await t.gw.ledger.createWallet({ credits: 20_000 });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'modest' });
    const as = { ...t, apiKey: key };
    const available = async () => (await t.gw.ledger.balance(wallet.id)).availableNano;
    const sent = t.sim.received.length;
    const big = await post(as, '/v1/chat/completions', {
      model: 'a-top-5.5',
      max_tokens: 8192,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(big.status).toBe(402);
    const err = (await big.json()) as any;
    expect(err.error.type).toBe('insufficient_credit');
    expect(err.error.message).toContain('max_tokens');
    expect(t.sim.received.length).toBe(sent);
    expect(await available()).toBe(20_000_000n);

    const A = PRICES['a-top-5.5'];
    const small = await post(as, '/v1/chat/completions', {
      model: 'a-top-5.5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi [[sim:usage input=100 output=20]]' }],
    });
    expect(small.status).toBe(200);
    await small.json();
    expect(20_000_000n - (await available())).toBe(nano(100, A.input) + nano(20, A.output));

    // No limit sent: the contract's 8192 does not fit, so the vendor is sent the largest that does.
    const fitted = await post(as, '/v1/chat/completions', {
      model: 'a-top-5.5',
      messages: [{ role: 'user', content: 'hi [[sim:usage input=100 output=20]]' }],
    });
    expect(fitted.status).toBe(200);
    await fitted.json();
    const written = Number(fitted.headers.get('x-service-max-tokens'));
    expect(written).toBeGreaterThan(100);
    expect(written).toBeLessThan(8192);
    expect((t.sim.received.at(-1)!.body as any).max_tokens).toBe(written);
  });
});
