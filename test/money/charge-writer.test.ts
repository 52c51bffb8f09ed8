import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { errors } from '../../engine/core/errors.ts';
import { ChargeSpool } from '../../engine/money/charge-spool.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';

const quiet = { warn: () => undefined, error: () => undefined };

describe('the charge writer', () => {
  it('gives up a charge the ledger refused for good, logs it, and counts it', async () => {
    const logged: string[] = [];
    const writer = new ChargeWriter(() => ({ warn: () => undefined, error: (_o: object, m: string) => void logged.push(m) }), {
      firstMs: 1,
      maxMs: 1,
      attempts: 100,
    });
    let writes = 0;
    const c = writer.submit('gone', async () => {
      writes++;
      throw errors.notFound("No reservation 'res_x'.");
    });
    await expect(c.committed).rejects.toThrow('No reservation');
    await c.done;
    expect(writes).toBe(1);
    expect(writer.stats()).toMatchObject({ pending: 0, givenUp: 1 });
    expect(logged).toContain('charge given up: the ledger refused it');
  });

  it('gives up a charge whose writes keep failing once its tries run out, and logs it', async () => {
    const logged: string[] = [];
    const log = { warn: () => undefined, error: (_o: object, m: string) => void logged.push(m) };
    const writer = new ChargeWriter(() => log, { firstMs: 1, maxMs: 1, attempts: 3 });
    let writes = 0;
    const c = writer.submit('down', async () => {
      writes++;
      throw new Error('connection refused');
    });
    await expect(c.committed).rejects.toThrow('connection refused');
    expect(writes).toBe(3);
    expect(writer.stats()).toMatchObject({ pending: 0, failing: 0, givenUp: 1 });
    expect(logged).toContain('charge given up: the database did not take it within its tries');
  });

  it("holds back only its wallet's calls while its charge waits on rows another session locked; any other failure, every call", async () => {
    const writer = new ChargeWriter(() => quiet, { firstMs: 5, maxMs: 5, attempts: 100 });
    let locked = true;
    const lockTimeout = Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });
    const c = writer.submit(
      'w1-call',
      async () => {
        if (locked) throw lockTimeout;
        return { chargedNano: 1n, shortfallNano: 0n };
      },
      undefined,
      'w1',
    );
    while (writer.stats().failing === 0) await new Promise((r) => setTimeout(r, 1));
    expect([writer.behind('w1'), writer.behind('w2'), writer.behind()]).toEqual([true, false, false]);
    const down = writer.submit('w2-call', () => Promise.reject(new Error('connection refused')), undefined, 'w2');
    await new Promise((r) => setTimeout(r, 10));
    expect([writer.behind('w1'), writer.behind('w2'), writer.behind('w3')]).toEqual([true, true, true]);
    locked = false;
    expect(await c.committed).toBe(1n);
    void down.committed.catch(() => undefined);
    expect(await writer.drain(1)).toBe(1);
  });

  it("lets a wallet's next call wait for a late charge: served once it lands, refused when it does not in time", async () => {
    const writer = new ChargeWriter(() => quiet, { firstMs: 20, maxMs: 20, attempts: 100 });
    let down = true;
    const c = writer.submit('late', async () => {
      if (down) throw new Error('connection refused');
      return { chargedNano: 1n, shortfallNano: 0n };
    });
    while (writer.stats().failing === 0) await new Promise((r) => setTimeout(r, 1));
    const started = Date.now();
    expect(await writer.caughtUp('w1', 50)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    setTimeout(() => (down = false), 30);
    expect(await writer.caughtUp('w1', 2_000)).toBe(true);
    expect(await c.committed).toBe(1n);
    expect(writer.behind('w1')).toBe(false);
  });

  it("waits only for the charges that hold back the wallet's calls, not for another wallet's locked rows", async () => {
    const writer = new ChargeWriter(() => quiet, { firstMs: 5, maxMs: 5, attempts: 1_000 });
    const lockTimeout = Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });
    const stuck = writer.submit('w1-call', () => Promise.reject(lockTimeout), undefined, 'w1');
    let down = true;
    writer.submit('w3-call', async () => {
      if (down) throw new Error('connection refused');
      return { chargedNano: 1n, shortfallNano: 0n };
    });
    while (writer.stats().failing < 2) await new Promise((r) => setTimeout(r, 1));
    setTimeout(() => (down = false), 30);
    const started = Date.now();
    expect(await writer.caughtUp('w2', 3_000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(writer.behind('w1')).toBe(true);
    void stuck.committed.catch(() => undefined);
    expect(await writer.drain(1)).toBe(1);
  });

  it("lets another wallet's call go once a late charge turns out to be a locked wallet's own, without it landing", async () => {
    // Found by an attack: the waiting call slept to its deadline, so every wallet's calls stalled 2 s behind one locked wallet.
    const writer = new ChargeWriter(() => quiet, { firstMs: 250, maxMs: 5_000, attempts: 1_000 });
    const lockTimeout = Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let attempt = 0;
    const write = async () => {
      // The first write waits on A's rows, then fails with 55P03; the next one waits until the lock goes.
      if (++attempt === 1) {
        await new Promise((r) => setTimeout(r, 300));
        throw lockTimeout;
      }
      await released;
      return { chargedNano: 1n, shortfallNano: 0n };
    };
    const c = writer.submit('a-call', write, undefined, 'A');
    c.answeredFirst(); // A's answer went out before its charge was written
    expect(writer.behind('B')).toBe(true); // not yet known to be A's own lock
    const started = Date.now();
    expect(await writer.caughtUp('B', 2_000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(800);
    expect(writer.behind('A')).toBe(true);
    release();
    expect(await c.committed).toBe(1n);
  });

  it('counts vendor work a wallet could not pay', async () => {
    const writer = new ChargeWriter(() => quiet);
    await writer.submit('short', async () => ({ chargedNano: 70n, shortfallNano: 30n })).committed;
    expect(writer.stats().shortfallNano).toBe(30n);
  });

  it('says at shutdown how many charges the database never took', async () => {
    const writer = new ChargeWriter(() => quiet, { firstMs: 1, maxMs: 2, attempts: 100 });
    writer.submit('never', () => Promise.reject(new Error('connection refused')));
    expect(await writer.drain(30)).toBe(1);
  });

  // Any sequence of failures, retries and late landings: every call is written at most once, and exactly once
  // when the database ends up taking writes; the writer's counts come back to zero.
  it('writes each intent once, whatever fails and whenever it lands', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ failures: fc.nat(4), delayMs: fc.nat(3), final: fc.boolean() }), { minLength: 1, maxLength: 12 }),
        async (calls) => {
          const writer = new ChargeWriter(() => quiet, { firstMs: 1, maxMs: 2, attempts: 100 });
          const landed = new Map<string, number>();
          const charges = calls.map((c, i) => {
            let attempts = 0;
            return writer.submit(`call-${i}`, async () => {
              attempts++;
              await new Promise((r) => setTimeout(r, c.delayMs));
              if (attempts <= c.failures) throw c.final ? errors.notFound('refused') : new Error('connection reset');
              landed.set(`call-${i}`, (landed.get(`call-${i}`) ?? 0) + 1);
              return { chargedNano: BigInt(i + 1), shortfallNano: 0n };
            });
          });
          const outcomes = await Promise.allSettled(charges.map((c) => c.committed));
          outcomes.forEach((o, i) => {
            const gaveUp = calls[i]!.final && calls[i]!.failures > 0;
            expect(o.status).toBe(gaveUp ? 'rejected' : 'fulfilled');
            expect(landed.get(`call-${i}`) ?? 0).toBe(gaveUp ? 0 : 1);
            if (o.status === 'fulfilled') expect(o.value).toBe(BigInt(i + 1));
          });
          expect(writer.stats()).toMatchObject({ pending: 0, atRisk: 0, failing: 0 });
        },
      ),
      { numRuns: 60 },
    );
  });

  it('tells a first try it is one only until its intent is kept, when another process may replay it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'writer-spool-'));
    try {
      const writer = new ChargeWriter(() => quiet, { firstMs: 1, maxMs: 1, attempts: 3 }, new ChargeSpool(dir, 'here:1:w'));
      const asked: boolean[] = [];
      let release: () => void = () => undefined;
      const c = writer.submit(
        'slow-call',
        async (firstTry) => {
          asked.push(firstTry());
          await new Promise<void>((r) => (release = r));
          asked.push(firstTry()); // asked again when its batch decides, after the answer went out first
          return { chargedNano: 1n, shortfallNano: 0n };
        },
        () => ({ callId: 'slow-call', kind: 'settle', reservationId: 'res_s', costNano: 1n }),
      );
      await new Promise((r) => setTimeout(r, 5));
      expect(c.answeredFirst()).toBe(true); // the commit wait ran out: kept on disk
      release();
      expect(await c.committed).toBe(1n);
      expect(asked).toEqual([true, false]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
