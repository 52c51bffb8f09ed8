// The turns of a daily-limited key's calls (engine/keys/day-holds.ts): one at a time and in order, the key's turn
// before its class's, and bounded: a call finding 256 waiting, or waiting more than 5 s, is refused (429,
// retry-after 1) and lets the calls behind it go on in order. An attack sent 300 calls at once and never reached the
// bound over HTTP (bodies arrive spread out), so the bounds are driven here directly.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GatewayError } from '../../engine/core/errors.ts';
import type { Queryable } from '../../engine/db/db.ts';
import { DayHolds } from '../../engine/keys/day-holds.ts';
import type { AuthContext } from '../../engine/keys/index.ts';

const noDb = {} as Queryable; // turns read nothing
const keyWithDay = (keyId: string, group?: { id: string; dailyLimitNano: bigint | null }) =>
  ({ keyId, dailyLimitNano: 1_000n, group: group ?? null }) as unknown as AuthContext;
const tick = () => new Promise((r) => setImmediate(r));

afterEach(() => {
  vi.useRealTimers();
});

describe('turns of a key with a daily limit', () => {
  it('a key and a class without a daily limit take no turn', () => {
    const days = new DayHolds(noDb);
    const open = { keyId: 'k', dailyLimitNano: null, group: { id: 'g', dailyLimitNano: null } } as unknown as AuthContext;
    expect(days.turn(open)).toBeNull();
  });

  it('one call at a time, in the order they came', async () => {
    const days = new DayHolds(noDb);
    const auth = keyWithDay('k');
    const order: number[] = [];
    const first = await days.turn(auth)!;
    const waiting = [1, 2, 3].map((n) =>
      days.turn(auth)!.then((end) => {
        order.push(n);
        end();
      }),
    );
    await tick();
    expect(order).toEqual([]);
    first();
    await Promise.all(waiting);
    expect(order).toEqual([1, 2, 3]);
    expect(await days.turn(auth)).toBeTypeOf('function'); // nothing left holding the key
  });

  it("two keys of one class wait on the class's turn, never on each other's", async () => {
    const days = new DayHolds(noDb);
    const group = { id: 'g', dailyLimitNano: 5_000n };
    const a = await days.turn(keyWithDay('a', group))!;
    let bIn = false;
    const b = days.turn(keyWithDay('b', group))!.then((end) => {
      bIn = true;
      end();
    });
    await tick();
    expect(bIn).toBe(false);
    a();
    await b;
    expect(bIn).toBe(true);
  });

  it('the 257th call waiting is refused at once, and the key is free again once the others end', async () => {
    const days = new DayHolds(noDb);
    const auth = keyWithDay('k');
    const first = await days.turn(auth)!;
    const ends: Promise<void>[] = [];
    for (let i = 0; i < 255; i++) ends.push(days.turn(auth)!.then((end) => end()));
    const refused = await days.turn(auth)!.catch((e: GatewayError) => e);
    expect((refused as GatewayError).status).toBe(429);
    expect((refused as GatewayError).type).toBe('key_limit_exceeded');
    expect((refused as GatewayError).headers['retry-after']).toBe('1');
    first();
    await Promise.all(ends);
    const again = await days.turn(auth)!;
    again();
  });

  it('a call waiting past 5 s is refused; the calls behind it still wait for the one ahead, then go', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const days = new DayHolds(noDb);
    const auth = keyWithDay('k');
    const first = await days.turn(auth)!;
    const late = days.turn(auth)!.catch((e: GatewayError) => e);
    await vi.advanceTimersByTimeAsync(4_000);
    let thirdIn = false;
    const third = days.turn(auth)!.then((end) => {
      thirdIn = true;
      end();
    });
    await vi.advanceTimersByTimeAsync(1_500); // the second has waited 5.5 s
    expect(((await late) as GatewayError).status).toBe(429);
    expect(thirdIn).toBe(false); // the first still holds the key
    first();
    await third;
    expect(thirdIn).toBe(true);
  });
});
