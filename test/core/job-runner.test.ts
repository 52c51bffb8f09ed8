// The polling loop the video worker and the webhook deliveries share: bounded rounds, a full batch followed by
// another at once, a failed round logged and the loop going on, and a stop that waits for the round in progress.
import { describe, expect, it } from 'vitest';
import { JobRunner } from '../../engine/core/job-runner.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function runner(round: (limit: number) => Promise<number>, opts: { batch?: number; intervalMs?: number } = {}) {
  const errors: unknown[] = [];
  const r = new JobRunner({
    round,
    batch: opts.batch ?? 3,
    intervalMs: opts.intervalMs ?? 60_000,
    log: () => ({ error: (o: object) => errors.push((o as { err: unknown }).err) }),
    failure: 'round failed',
  });
  return { r, errors };
}

describe('JobRunner', () => {
  it('hands each round the batch as its limit and runs again at once while rounds fill it', async () => {
    let due = 7;
    const limits: number[] = [];
    const { r } = runner(async (limit) => {
      limits.push(limit);
      const took = Math.min(limit, due);
      due -= took;
      return took;
    });
    r.start();
    await sleep(5);
    await r.settled();
    // 3 + 3 filled the batch; 1 did not, so the next round waits for the interval.
    expect(limits).toEqual([3, 3, 3]);
    expect(due).toBe(0);
    await r.stop();
  });

  it('logs a failed round and goes on at the next interval', async () => {
    let n = 0;
    const { r, errors } = runner(
      async () => {
        n++;
        if (n === 1) throw new Error('boom');
        return 0;
      },
      { intervalMs: 10 },
    );
    r.start();
    await sleep(60);
    await r.stop();
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom']);
    expect(n).toBeGreaterThan(1);
  });

  it('stop waits for the round in progress and starts no other', async () => {
    let rounds = 0;
    let finished = false;
    const { r } = runner(
      async () => {
        rounds++;
        await sleep(30);
        finished = true;
        return 3; // a full batch: another would follow at once
      },
      { intervalMs: 5 },
    );
    r.start();
    await sleep(5);
    await r.stop();
    expect(finished).toBe(true);
    await sleep(20);
    expect(rounds).toBe(1);
  });

  it('a kick runs a round now, or once more after the one in progress', async () => {
    let rounds = 0;
    const { r } = runner(async () => {
      rounds++;
      await sleep(10);
      return 0;
    });
    r.start();
    await sleep(2);
    r.kick(); // during the first round
    await r.settled();
    expect(rounds).toBe(2);
    r.kick(); // idle: a round at once, which settled waits for
    await r.settled();
    expect(rounds).toBe(3);
    await r.stop();
    r.kick(); // stopped: nothing
    await sleep(5);
    expect(rounds).toBe(3);
  });
});
