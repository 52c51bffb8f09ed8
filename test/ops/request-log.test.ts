// Every answer carries x-request-id (the client's when sane, else a fresh one; errors and 404s too), and each
// call leaves one info line an operator can search: door, model, vendor, route, fallback depth, status,
// tokens, charge, duration, key prefix. No secret and no query value ever reaches the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const lines: Record<string, any>[] = [];
const raw: string[] = [];
const stream = {
  write(line: string) {
    raw.push(line);
    lines.push(JSON.parse(line));
  },
};

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ logger: { level: 'info', stream } });
});
afterAll(() => t?.close());

/** The log line of the request with this id, once it is written (it waits for the call's settlement). */
async function lineOf(requestId: string): Promise<Record<string, any>> {
  for (let i = 0; i < 50; i++) {
    const line = lines.find((l) => l.requestId === requestId && /completed/.test(l.msg));
    if (line) return line;
    await sleep(20);
  }
  throw new Error(`no log line for ${requestId}`);
}

const USER = [{ role: 'user', content: 'Hello log' }];

describe('x-request-id', () => {
  it('echoes a sane client id on a call', async () => {
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER }, { 'x-request-id': 'client-req-42' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('client-req-42');
  });

  it('generates one when the client sends none, or one that is too long or not printable', async () => {
    const none = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    const tooLong = await fetch(`${t.url}/v1/models`, {
      headers: { authorization: `Bearer ${t.apiKey}`, 'x-request-id': 'x'.repeat(129) },
    });
    const spaced = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}`, 'x-request-id': 'a b' } });
    const ids = [none, tooLong, spaced].map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(3);
  });

  it('is on errors: a 404, a 401, a 400 and a streamed answer', async () => {
    const notFound = await fetch(`${t.url}/nowhere`, { headers: { 'x-request-id': 'r-404' } });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('x-request-id')).toBe('r-404');
    const unauth = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-request-id': 'r-401', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(unauth.status).toBe(401);
    expect(unauth.headers.get('x-request-id')).toBe('r-401');
    const bad = await post(t, '/v1/chat/completions', { model: 'b-5' }, { 'x-request-id': 'r-400' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('x-request-id')).toBe('r-400');
    const streamed = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, stream: true }, { 'x-request-id': 'r-sse' });
    expect(streamed.headers.get('content-type')).toMatch(/event-stream/);
    expect(streamed.headers.get('x-request-id')).toBe('r-sse');
    await streamed.text();
  });
});

describe('the call log line', () => {
  it('has the call facts, the route by name and the charge; no key and no route URL', async () => {
    t.sim.inject('a0', { kind: 'status', status: 529 });
    const res = await post(t, '/v1/chat/completions', { model: 'a-top-5.5', messages: USER }, { 'x-request-id': 'r-fallback' });
    expect(res.status).toBe(200);
    const charged = BigInt(res.headers.get('x-service-charged-nano') ?? '-1');
    const line = await lineOf('r-fallback');
    expect(line).toMatchObject({
      level: 30,
      msg: 'call completed',
      door: 'chat',
      model: 'a-top-5.5',
      vendor: 'a',
      route: 'a1',
      failedRoutes: ['a0'],
      fallbackDepth: 1,
      status: 200,
      path: '/v1/chat/completions',
      keyPrefix: expect.stringMatching(/^sk-svc-/),
    });
    expect(line.tokensIn).toBeGreaterThan(0);
    expect(line.tokensOut).toBeGreaterThan(0);
    expect(BigInt(line.chargedNano)).toBeGreaterThan(0n);
    if (charged >= 0n) expect(BigInt(line.chargedNano)).toBe(charged);
    expect(line.durationMs).toBeGreaterThanOrEqual(0);
    const shown = line.keyPrefix.replace(/(…|\.\.\.)$/, '');
    expect(t.apiKey.startsWith(shown)).toBe(true);
    expect(shown.length).toBeLessThan(20);
  });

  it('a streamed call is logged after it settles, with its charge and time to first byte', async () => {
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, stream: true }, { 'x-request-id': 'r-stream-log' });
    await res.text();
    const line = await lineOf('r-stream-log');
    expect(line).toMatchObject({ door: 'chat', model: 'b-5', vendor: 'b', route: 'b0', fallbackDepth: 0, status: 200 });
    expect(BigInt(line.chargedNano)).toBeGreaterThan(0n);
    expect(line.ttfbMs).toBeLessThanOrEqual(line.durationMs);
  });

  it('a refused call names the refusal and the model it asked for', async () => {
    const res = await post(
      t,
      '/v1/chat/completions',
      { model: 'b-5', messages: USER, max_tokens: 100_000_000 },
      { 'x-request-id': 'r-refused' },
    );
    const line = await lineOf('r-refused');
    expect(line.status).toBe(res.status);
    expect(line.model).toBe('b-5');
  });

  it('never logs a query value, a key or a vendor credential', async () => {
    await fetch(`${t.url}/v1/models?api_key=${t.apiKey}&x=1`, { headers: { 'x-request-id': 'r-query' } });
    await fetch(`${t.url}/v1/videos/video_x/file?token=signed-secret-token`, { headers: { 'x-request-id': 'r-token' } });
    const q = await lineOf('r-query');
    expect(q.path).toBe('/v1/models?api_key=[redacted]&x=[redacted]');
    await lineOf('r-token');
    const all = raw.join('');
    expect(all).not.toContain(t.apiKey);
    expect(all).not.toContain('signed-secret-token');
    expect(all).not.toMatch(/vendor-[a-e]-secret/);
    expect(all).not.toContain(`127.0.0.1:${new URL(t.sim.routeUrl('a0')).port}`);
  });
});
