// The one route loop (engine/calls/route-loop.ts) on its own, with answers made up in the test: what moves
// a call to the next route, what ends it, the depth each route sees, and the time limits.
import { describe, expect, it } from 'vitest';
import { CallAbort, type CallSignal } from '../../engine/calls/call-signal.ts';
import { startDeadline } from '../../engine/calls/deadline.ts';
import { parseRetryAfter, type RouteLoop, tryRoutes } from '../../engine/calls/route-loop.ts';
import { RouteFailure, type UpstreamAnswer } from '../../engine/calls/upstream.ts';
import type { Route } from '../../engine/calls/vendor-routes.ts';

const routes: Route[] = [0, 1, 2].map((index) => ({ vendor: 'b', index, baseUrl: `http://b${index}.test`, key: 'k', simulated: true }));
const quiet = { warn: () => undefined, error: () => undefined };

function answer(status: number, body = '', headers: Record<string, string> = {}): UpstreamAnswer {
  return { status, headers, body: { text: async () => body, dump: async () => undefined } as unknown as UpstreamAnswer['body'] };
}

/** A loop whose routes answer in turn from `script`; records which route was asked and at what depth. */
function scripted(script: (() => Promise<UpstreamAnswer>)[], extra: Partial<RouteLoop<string>> = {}) {
  const asked: { route: number; depth?: number }[] = [];
  let i = 0;
  const loop: RouteLoop<string> = {
    send: (route) => {
      asked.push({ route: route.index });
      return script[i++]!();
    },
    read: async (a, _route, depth) => {
      asked[asked.length - 1]!.depth = depth;
      const text = await a.body.text();
      return text === 'unusable' ? { done: false, problem: 'unusable answer' } : { done: true, value: `${a.status} ${text}` };
    },
    log: quiet,
    ...extra,
  };
  return { loop, asked };
}

describe('tryRoutes', () => {
  it('moves on after 429, 5xx, a failed connection and an unusable answer; the answering route sees how many failed', async () => {
    const { loop, asked } = scripted([
      async () => answer(429),
      async () => {
        throw new RouteFailure('connection reset');
      },
      async () => answer(200, 'unusable'),
    ]);
    const failed = await tryRoutes(routes, loop);
    expect(failed).toEqual({ done: false, failedAttempts: 3, lastProblem: 'unusable answer' });
    expect(asked.map((a) => a.route)).toEqual([0, 1, 2]);

    const second = scripted([async () => answer(503), async () => answer(200, 'ok')]);
    expect(await tryRoutes(routes, second.loop)).toEqual({ done: true, value: '200 ok' });
    expect(second.asked).toEqual([{ route: 0 }, { route: 1, depth: 1 }]);
  });

  it('a request not safe to send twice goes to the next route only when it never left', async () => {
    const lost = scripted([async () => Promise.reject(new RouteFailure('other side closed')), async () => answer(200, 'ok')], {
      sendsOnce: true,
    });
    expect(await tryRoutes(routes, lost.loop)).toEqual({ done: false, failedAttempts: 1, lastProblem: 'route 0: other side closed' });
    expect(lost.asked.map((a) => a.route)).toEqual([0]);
    const refused = scripted(
      [async () => Promise.reject(new RouteFailure('ECONNREFUSED', undefined, false)), async () => answer(200, 'ok')],
      {
        sendsOnce: true,
      },
    );
    expect(await tryRoutes(routes, refused.loop)).toEqual({ done: true, value: '200 ok' });
    for (const status of [429, 503]) {
      const busy = scripted([async () => answer(status), async () => answer(200, 'ok')], { sendsOnce: true });
      expect(await tryRoutes(routes, busy.loop)).toEqual({ done: true, value: '200 ok' });
    }
    // Any other answer came from a vendor that may have taken the request on: a 500, or a 200 the caller cannot use.
    for (const first of [answer(500), answer(200, 'unusable')]) {
      const taken = scripted([async () => first, async () => answer(200, 'ok')], { sendsOnce: true });
      expect(await tryRoutes(routes, taken.loop)).toMatchObject({ done: false, failedAttempts: 1 });
      expect(taken.asked.map((a) => a.route)).toEqual([0]);
    }
  });

  it("a 401 or 403 refuses the gateway's credential: no route sent the same one is tried, one with another is", async () => {
    for (const status of [401, 403]) {
      const errorsLogged: object[] = [];
      const same = scripted([async () => answer(status, 'no')], {
        log: { warn: () => undefined, error: (o) => void errorsLogged.push(o) },
      });
      const out = await tryRoutes(routes, same.loop);
      expect(out).toMatchObject({ done: false, failedAttempts: 1, credentialRefused: [{ route: routes[0], status }] });
      expect(same.asked.map((a) => a.route)).toEqual([0]);
      expect(errorsLogged).toEqual([expect.objectContaining({ vendor: 'b', route: 0, status })]);
    }
    const otherKey = routes.map((r, i) => ({ ...r, key: i === 2 ? 'k2' : 'k' }));
    const mixed = scripted([async () => answer(401), async () => answer(200, 'ok')]);
    expect(await tryRoutes(otherKey, mixed.loop)).toEqual({ done: true, value: '200 ok' });
    expect(mixed.asked).toEqual([{ route: 0 }, { route: 2, depth: 1 }]);
  });

  it('a vendor 4xx is an answer, not a reason to move on', async () => {
    const { loop, asked } = scripted([async () => answer(400, 'bad request')]);
    expect(await tryRoutes(routes, loop)).toEqual({ done: true, value: '400 bad request' });
    expect(asked).toHaveLength(1);
  });

  it('names the last problem with the route it happened on', async () => {
    const { loop } = scripted([async () => answer(500), async () => answer(502), async () => answer(529)]);
    expect(await tryRoutes(routes, loop)).toMatchObject({ done: false, lastProblem: 'route 2 answered 529' });
  });

  it('any other error ends the loop', async () => {
    const { loop, asked } = scripted([
      async () => {
        throw new Error('a bug');
      },
    ]);
    await expect(tryRoutes(routes, loop)).rejects.toThrow('a bug');
    expect(asked).toHaveLength(1);
  });

  it('one more pass when every route asked for a short wait, within retryAfterMaxMs; none without it', async () => {
    const busy = () => async () => answer(429, '', { 'retry-after': '0' });
    const { loop, asked } = scripted([busy(), busy(), busy(), async () => answer(200, 'ok')], { retryAfterMaxMs: 10 });
    expect(await tryRoutes(routes, loop)).toEqual({ done: true, value: '200 ok' });
    expect(asked.map((a) => a.route)).toEqual([0, 1, 2, 0]);
    expect(asked[3]!.depth).toBe(3);

    const once = scripted([busy(), busy(), busy(), async () => answer(200, 'ok')]);
    expect(await tryRoutes(routes, once.loop)).toMatchObject({ done: false, failedAttempts: 3 });

    const tooLong = () => async () => answer(429, '', { 'retry-after': '60' });
    const long = scripted([tooLong(), tooLong(), tooLong(), async () => answer(200, 'ok')], { retryAfterMaxMs: 10_000 });
    expect(await tryRoutes(routes, long.loop)).toMatchObject({ done: false, failedAttempts: 3 });
  });

  it('an attempt that runs out of its own time fails that route only; the whole loop running out ends it', async () => {
    const hang = (_route: Route, signal: CallSignal | undefined) =>
      new Promise<UpstreamAnswer>((_resolve, reject) => signal!.once('abort', () => reject(signal!.reason)));
    let calls = 0;
    const perAttempt = await tryRoutes(routes.slice(0, 2), {
      send: (route, signal) => (calls++ === 0 ? hang(route, signal) : Promise.resolve(answer(200, 'late but fine'))),
      read: async (a) => ({ done: true, value: await a.body.text() }),
      log: quiet,
      attemptTimeoutMs: 20,
    });
    expect(perAttempt).toEqual({ done: true, value: 'late but fine' });

    const whole = startDeadline(20).signal;
    await expect(
      tryRoutes(routes, {
        send: hang,
        read: async () => ({ done: true, value: 'never' }),
        log: quiet,
        signal: whole,
        attemptTimeoutMs: 1000,
      }),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('the wait a vendor asked for ends when the loop is stopped, during it or before it began', async () => {
    const slowDown = async () => answer(429, '', { 'retry-after': '5' });
    const during = startDeadline(50);
    const started = Date.now();
    await expect(
      tryRoutes(routes, scripted([slowDown, slowDown, slowDown], { retryAfterMaxMs: 10_000, signal: during.signal }).loop),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(2_000);
    during.end();

    const stop = new CallAbort();
    const stopOnLast = async () => {
      stop.abort(new Error('client left'));
      return answer(429, '', { 'retry-after': '5' });
    };
    const before = Date.now();
    await expect(
      tryRoutes(routes, scripted([slowDown, slowDown, stopOnLast], { retryAfterMaxMs: 10_000, signal: stop }).loop),
    ).rejects.toThrow('client left');
    expect(Date.now() - before).toBeLessThan(2_000);
  });

  it('no routes: nothing is sent and there is no problem to name', async () => {
    const { loop, asked } = scripted([]);
    expect(await tryRoutes([], loop)).toEqual({ done: false, failedAttempts: 0, lastProblem: undefined });
    expect(asked).toHaveLength(0);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, and nothing else', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    const inAMinute = parseRetryAfter(new Date(Date.now() + 60_000).toUTCString())!;
    expect(inAMinute).toBeGreaterThan(55_000);
    expect(inAMinute).toBeLessThanOrEqual(60_000);
  });
});
