// Route fallback over real HTTP: a failing first route (429, 500, 529, a reset connection, a stream that fails
// before its first byte) moves the same model to the second route; both failing gives 502 with nothing charged;
// a vendor 400 is not retried. Faults are injected per route in the simulator.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';
import { A_VERSION, openai, parseSse, post } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterEach(() => t.sim.clearFaults());
afterAll(() => t?.close());

const USER = [{ role: 'user', content: 'Hello fallback' }];

/** Routes that received the calls made since `n` for vendor `v`. */
const routesSince = (v: 'a' | 'b', n: number) =>
  t
    .received(v)
    .slice(n)
    .map((r) => r.route);

describe('fallback to the next route', () => {
  for (const [vendor, model] of [
    ['a', 'a-top-5.5'],
    ['b', 'b-5'],
  ] as const) {
    for (const status of [429, 500, 529]) {
      it(`vendor ${vendor.toUpperCase()}: ${status} on route ${vendor}0 → answered by ${vendor}1, depth 1`, async () => {
        const n = t.received(vendor).length;
        t.sim.inject(`${vendor}0`, { kind: 'status', status });
        const res = await post(t, '/v1/chat/completions', { model, messages: USER });
        expect(res.status).toBe(200);
        expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
        const body = (await res.json()) as any;
        expect(body.choices[0].message.content).toBe(`Simulated reply from ${model}: Hello fallback`);
        expect(routesSince(vendor, n)).toEqual([`${vendor}0`, `${vendor}1`]);
      });
    }

    it(`vendor ${vendor.toUpperCase()}: a reset connection on ${vendor}0 → ${vendor}1, depth 1`, async () => {
      const n = t.received(vendor).length;
      t.sim.inject(`${vendor}0`, { kind: 'reset' });
      const res = await post(t, '/v1/chat/completions', { model, messages: USER });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
      await res.json();
      expect(routesSince(vendor, n)).toEqual([`${vendor}0`, `${vendor}1`]);
    });
  }

  it('the SDK sees the depth header too (responses door, 503 on b0)', async () => {
    t.sim.inject('b0', { kind: 'status', status: 503 });
    const { data, response } = await openai(t).responses.create({ model: 'b-pro-5', input: 'hi' }).withResponse();
    expect(response.headers.get('x-gateway-fallback-depth')).toBe('1');
    expect(data.output_text).toBe('Simulated reply from b-pro-5: hi');
  });

  it('the messages door falls back as well (529 overloaded on a0)', async () => {
    const n = t.received('a').length;
    t.sim.inject('a0', { kind: 'status', status: 529 });
    const res = await post(t, '/v1/messages', { model: 'a-top-5.5', max_tokens: 64, messages: USER }, A_VERSION);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    expect(((await res.json()) as any).type).toBe('message');
    expect(routesSince('a', n)).toEqual(['a0', 'a1']);
  });

  it('no fault: depth 0, only the first route called', async () => {
    const n = t.received('a').length;
    const res = await post(t, '/v1/chat/completions', { model: 'a-top-5.5', messages: USER });
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('0');
    await res.json();
    expect(routesSince('a', n)).toEqual(['a0']);
  });

  // An attack found this a 502 "other side closed" with b1 healthy: the body's break was not a route failure.
  it('a whole answer whose body breaks off after its head on b0 falls back (depth 1), charged once', async () => {
    const n = t.received('b').length;
    const before = await t.balance();
    t.sim.inject('b0', { kind: 'stall', ms: 200, headers: true });
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    expect(body.choices[0].message.content).toBe('Simulated reply from b-5: Hello fallback');
    expect(routesSince('b', n)).toEqual(['b0', 'b1']);
    expect(before - (await t.balance())).toBe(BigInt(res.headers.get('x-service-charged-nano')!));
  });
});

describe('every route fails', () => {
  it.each([
    ['a', 'a-top-5.5', 529],
    ['b', 'b-5', 500],
  ] as const)('vendor %s: 502 upstream_error, both routes tried, nothing charged or held', async (vendor, model, status) => {
    const before = await t.balance();
    const n = t.received(vendor).length;
    t.sim.inject(`${vendor}0`, { kind: 'status', status });
    t.sim.inject(`${vendor}1`, { kind: 'reset' });
    const res = await post(t, '/v1/chat/completions', { model, messages: USER });
    expect(res.status).toBe(502);
    const body = (await res.json()) as any;
    expect(body.error.type).toBe('upstream_error');
    expect(routesSince(vendor, n)).toEqual([`${vendor}0`, `${vendor}1`]);
    expect(await t.balance()).toBe(before);
    expect(await t.held()).toBe(0n);
  });

  it('messages door: 502 in the messages error shape', async () => {
    t.sim.inject('a0', { kind: 'status', status: 500 });
    t.sim.inject('a1', { kind: 'status', status: 429 });
    const res = await post(t, '/v1/messages', { model: 'a-top-5.5', max_tokens: 64, messages: USER }, A_VERSION);
    expect(res.status).toBe(502);
    const body = (await res.json()) as any;
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('upstream_error');
  });
});

describe('not retried', () => {
  it('a 400 from the vendor goes back unchanged from the first route only', async () => {
    const before = await t.balance();
    const n = t.received('a').length;
    t.sim.inject('a0', { kind: 'status', status: 400 });
    const res = await post(t, '/v1/chat/completions', { model: 'a-top-5.5', messages: USER });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('0');
    const body = (await res.json()) as any;
    // Vendor A's messages-shape error re-shaped for the chat door, type kept.
    expect(body.error.type).toBe('invalid_request_error');
    expect(routesSince('a', n)).toEqual(['a0']);
    expect(await t.balance()).toBe(before);
  });

  it('a 400 from the second route after a 429 on the first: returned as is, header names the route that answered', async () => {
    const before = await t.balance();
    const n = t.received('b').length;
    t.sim.inject('b0', { kind: 'status', status: 429 });
    // b-5 refuses max_tokens itself (catalog rule vendor-refuses-max-tokens, imitated by the simulator).
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, max_tokens: 50 });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    expect(((await res.json()) as any).error.message).toContain('max_completion_tokens');
    expect(routesSince('b', n)).toEqual(['b0', 'b1']);
    expect(await t.balance()).toBe(before);
  });

  it('a 404 from the vendor is not retried either', async () => {
    const n = t.received('b').length;
    t.sim.inject('b0', { kind: 'status', status: 404 });
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER });
    expect(res.status).toBe(404);
    await res.text();
    expect(routesSince('b', n)).toEqual(['b0']);
  });
});

describe('streams', () => {
  it('a stream whose first route answers 529 falls back before the first byte (depth 1)', async () => {
    const n = t.received('a').length;
    t.sim.inject('a0', { kind: 'status', status: 529 });
    const res = await post(t, '/v1/chat/completions', { model: 'a-top-5.5', messages: USER, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    const frames = parseSse(await res.text());
    const text = frames.map((f) => f.data?.choices?.[0]?.delta?.content ?? '').join('');
    expect(text).toBe('Simulated reply from a-top-5.5: Hello fallback');
    expect(routesSince('a', n)).toEqual(['a0', 'a1']);
  });

  it('a stream that opens with an error event on the first route falls back (vendor A, depth 1)', async () => {
    const n = t.received('a').length;
    t.sim.inject('a0', { kind: 'stream-error', afterEvents: 0 });
    const res = await post(t, '/v1/chat/completions', { model: 'a-top-5.5', messages: USER, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    const frames = parseSse(await res.text());
    expect(frames.some((f) => f.data?.error)).toBe(false);
    expect(frames[frames.length - 1]!.data).toBe('[DONE]');
    expect(routesSince('a', n)).toEqual(['a0', 'a1']);
  });

  it('a passthrough stream reset on b0 before any byte falls back (depth 1)', async () => {
    const n = t.received('b').length;
    t.sim.inject('b0', { kind: 'reset' });
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    const frames = parseSse(await res.text());
    expect(frames.map((f) => f.data?.choices?.[0]?.delta?.content ?? '').join('')).toBe('Simulated reply from b-5: Hello fallback');
    expect(routesSince('b', n)).toEqual(['b0', 'b1']);
  });

  it('a responses stream whose first route answers 500 falls back (depth 1)', async () => {
    t.sim.inject('b0', { kind: 'status', status: 500 });
    const res = await post(t, '/v1/responses', { model: 'b-5', input: 'Stream me', stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    const events = parseSse(await res.text());
    expect(events.filter((e) => e.event === 'response.completed')).toHaveLength(1);
  });

  // A vendor's stream opens (a message's start, a role chunk, a response created) before the model writes: an
  // error or a reset right after that opening still falls back, since nothing reached the client (lessons.md 10).
  const openings: [string, 'a' | 'b', string, Record<string, unknown>, number][] = [
    ['chat door, vendor A, after message_start', 'a', '/v1/chat/completions', { model: 'a-top-5.5', messages: USER }, 1],
    ['chat door, vendor A, after an empty text block starts', 'a', '/v1/chat/completions', { model: 'a-top-5.5', messages: USER }, 2],
    ['messages door, after message_start', 'a', '/v1/messages', { model: 'a-top-5.5', max_tokens: 64, messages: USER }, 1],
    ['chat door, vendor B, after the role chunk', 'b', '/v1/chat/completions', { model: 'b-5', messages: USER }, 1],
    ['responses door, after response.created', 'b', '/v1/responses', { model: 'b-5', input: 'Hello fallback' }, 1],
  ];
  for (const [name, vendor, path, body, afterEvents] of openings) {
    it(`${name}: an error falls back (depth 1), with no error frame and nothing of the first route`, async () => {
      const n = t.received(vendor).length;
      t.sim.inject(`${vendor}0`, { kind: 'stream-error', afterEvents });
      const res = await post(t, path, { ...body, stream: true }, vendor === 'a' ? A_VERSION : {});
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
      const frames = parseSse(await res.text());
      expect(frames.some((f) => f.event === 'error' || f.data?.error || f.data?.type === 'error')).toBe(false);
      expect(frames.filter((f) => ['message_start', 'response.created'].includes(f.data?.type))).toHaveLength(
        path === '/v1/chat/completions' ? 0 : 1,
      );
      expect(routesSince(vendor, n)).toEqual([`${vendor}0`, `${vendor}1`]);
      expect(await t.held()).toBe(0n);
    });
  }

  it('a stream reset right after its role chunk falls back (depth 1)', async () => {
    const n = t.received('b').length;
    t.sim.inject('b0', { kind: 'reset-mid-stream', afterEvents: 1 });
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, stream: true });
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    const frames = parseSse(await res.text());
    expect(frames.map((f) => f.data?.choices?.[0]?.delta?.content ?? '').join('')).toBe('Simulated reply from b-5: Hello fallback');
    expect(routesSince('b', n)).toEqual(['b0', 'b1']);
  });

  it('an opening that waits for content is sent once stream_opening_hold_ms (2 s as shipped) has passed', async () => {
    // A model that thinks before it writes: after its role chunk, nothing for 4 s, then the connection drops.
    t.sim.inject('b0', { kind: 'stall', ms: 4000, afterEvents: 1 });
    const started = performance.now();
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, stream: true });
    const reader = res.body!.getReader();
    const first = await reader.read();
    const firstAt = performance.now() - started;
    expect(new TextDecoder().decode(first.value)).toContain('"role":"assistant"');
    expect(firstAt).toBeGreaterThanOrEqual(1900);
    expect(firstAt).toBeLessThan(3900);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('0');
    while (!(await reader.read()).done); // the drop ends it with an error frame; only b0 was asked
    expect(await t.held()).toBe(0n);
  }, 15_000);

  it('a stream that fails after bytes reached the client is not retried; the client sees an error frame', async () => {
    const n = t.received('a').length;
    t.sim.inject('a0', { kind: 'stream-error', afterEvents: 4 });
    const res = await post(t, '/v1/chat/completions', {
      model: 'a-top-5.5',
      messages: [{ role: 'user', content: 'Cut me [[sim:long=20]]' }],
      stream: true,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('0');
    const frames = parseSse(await res.text());
    expect(frames.some((f) => f.data?.error)).toBe(true);
    expect(routesSince('a', n)).toEqual(['a0']);
    expect(await t.held()).toBe(0n);
  });
});

describe('a client gone before the next route', () => {
  it("is not answered by a route started after it left: the failed route's opening is all there was", async () => {
    // b0 opens, then stalls past the time the client stays; it drops at 1.5 s, after the client left at 0.5 s.
    const n = t.received('b').length;
    const before = await t.balance();
    t.sim.inject('b0', { kind: 'stall', ms: 1_500, afterEvents: 1 });
    const leave = new AbortController();
    const call = post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, stream: true }, {}, leave.signal)
      .then((r) => r.text())
      .catch((e) => e);
    await new Promise((r) => setTimeout(r, 500));
    leave.abort();
    await call;
    await new Promise((r) => setTimeout(r, 2_000));
    expect(routesSince('b', n)).toEqual(['b0']);
    expect(await t.held()).toBe(0n);
    expect(await t.balance()).toBe(before);
  }, 10_000);
});

describe('an opening held when the call runs out of time', () => {
  let short: TestGateway;
  let tree: TempTree;
  beforeAll(async () => {
    tree = tempCatalogTree();
    tree.edit('config/limits.yaml', (y) => y.replace(/ {2}chat: 300000/, '  chat: 1000'));
    short = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog } });
  });
  afterAll(async () => {
    await short?.close();
    tree?.remove();
  });

  it('is the vendor work it is: sent with an error frame, the call charged, nothing left held', async () => {
    // The role chunk, then silence past the chat door's 1 s: no other route can be asked in the time left.
    short.sim.inject('b0', { kind: 'stall', ms: 3_000, afterEvents: 1 });
    const before = await short.balance();
    const res = await post(short, '/v1/chat/completions', { model: 'b-5', messages: USER, stream: true });
    expect(res.status).toBe(200);
    const frames = parseSse(await res.text());
    expect(frames[0]?.data?.choices?.[0]?.delta?.role).toBe('assistant');
    expect(frames.some((f) => f.data?.error)).toBe(true);
    expect(short.received('b').map((r) => r.route)).toEqual(['b0']);
    expect(await short.held()).toBe(0n);
    expect(await short.balance()).toBeLessThan(before);
  }, 15_000);
});

describe('Retry-After', () => {
  /** Both of vendor B's routes answer 429 asking for `seconds`. */
  const bothBusy = (seconds: number) => {
    for (const route of ['b0', 'b1']) t.sim.inject(route, { kind: 'status', status: 429, retryAfterSeconds: seconds });
  };

  it('when every route answers 429 with a short Retry-After, the gateway waits and makes one more pass', async () => {
    const n = t.received('b').length;
    bothBusy(1);
    const started = Date.now();
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('2');
    await res.json();
    expect(routesSince('b', n)).toEqual(['b0', 'b1', 'b0']);
  });

  it('a client that leaves during the wait is asked nothing more: no second pass, nothing charged or held', async () => {
    const n = t.received('b').length;
    const before = await t.balance();
    bothBusy(1);
    const leave = new AbortController();
    const call = post(t, '/v1/chat/completions', { model: 'b-5', messages: USER }, {}, leave.signal).catch((e) => e);
    await new Promise((r) => setTimeout(r, 300));
    leave.abort();
    await call;
    await new Promise((r) => setTimeout(r, 1_500)); // past the wait, when the second pass would have gone
    expect(routesSince('b', n)).toEqual(['b0', 'b1']);
    expect(await t.held()).toBe(0n);
    expect(await t.balance()).toBe(before);
  });

  it('a Retry-After longer than the configured limit is not waited for: 502 at once', async () => {
    const n = t.received('b').length;
    bothBusy(60);
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER });
    expect(res.status).toBe(502);
    expect(((await res.json()) as any).error.type).toBe('upstream_error');
    expect(routesSince('b', n)).toEqual(['b0', 'b1']);
    // The wait the vendor asked for is the client's to honour: the 502 passes it on.
    expect(res.headers.get('retry-after')).toBe('60');
  });

  it('a second pass that fails again answers 502 without waiting once more', async () => {
    const n = t.received('b').length;
    bothBusy(1);
    bothBusy(1);
    const started = Date.now();
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER });
    expect(res.status).toBe(502);
    expect(Date.now() - started).toBeLessThan(1900);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(routesSince('b', n)).toEqual(['b0', 'b1', 'b0', 'b1']);
  });
});
