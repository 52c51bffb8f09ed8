import { describe, expect, it } from 'vitest';
import { CallCharge } from '../../engine/calls/call-charge.ts';
import { emptyUsage } from '../../engine/core/types.ts';
import type { Accounts, Caller, Hold } from '../../engine/money/accounts.ts';
import type { ChargeSpool } from '../../engine/money/charge-spool.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import { KeptHolds } from '../../engine/money/kept-holds.ts';

const caller: Caller = { keyId: 'k', walletId: 'w', keyPrefix: 'sk-svc-x…', audience: null };
const hold: Hold = { callId: 'c', amountNano: 100n };
const quiet = { warn: () => undefined, error: () => undefined };
const usage = { ...emptyUsage(), output_tokens: 1 };

/** Accounts whose settles are written by a real writer, against a database that fails `failures` times, then takes `delayMs` per write. */
function accountsOver(writer: ChargeWriter, failures: number, delayMs = 0) {
  const calls = { writes: 0, release: 0 };
  const accounts = {
    charge: (_c: Caller, h: Hold, cost: bigint) =>
      writer.submit(
        h.callId,
        async () => {
          calls.writes++;
          if (calls.writes <= failures) throw new Error('connection reset');
          await new Promise((r) => setTimeout(r, delayMs));
          return { chargedNano: cost, shortfallNano: 0n };
        },
        () => ({ callId: h.callId, kind: 'settle', reservationId: `res_${h.callId}`, costNano: cost }),
      ),
    async release() {
      calls.release++;
      throw new Error('connection reset');
    },
  } as unknown as Accounts;
  return { accounts, calls };
}

const settlementOf = (accounts: Accounts, commitWaitMs: number) =>
  new CallCharge(caller, hold, { accounts, log: quiet, costOf: () => 42n, commitWaitMs });

describe("a call's charge", () => {
  it('ends once its charge is committed, and says what was charged', async () => {
    const writer = new ChargeWriter(() => quiet, { firstMs: 1, maxMs: 2, attempts: 100 });
    const { accounts, calls } = accountsOver(writer, 2);
    const s = settlementOf(accounts, 1_000);
    s.record(usage);
    expect(await s.finish()).toBe(42n);
    expect(await s.finish(), 'a second finish charges nothing more').toBe(42n);
    expect(calls.writes).toBe(3);
    expect(writer.stats()).toMatchObject({ pending: 0, atRisk: 0 });
  });

  it("lets an answer go out before its charge only once the charge's hold is marked as owed", async () => {
    let markDone = (): void => undefined;
    const marks: boolean[] = [];
    const kept = new KeptHolds(
      (_id, mark) =>
        new Promise<void>((r) => {
          marks.push(mark);
          markDone = r;
        }),
      () => undefined,
    );
    const spool = { keep: () => undefined, landed: () => undefined } as unknown as ChargeSpool;
    const writer = new ChargeWriter(() => quiet, { firstMs: 5, maxMs: 5, attempts: 100 }, spool, kept);
    const { accounts } = accountsOver(writer, 100);
    const s = settlementOf(accounts, 20);
    s.record(usage);
    let ended = false;
    const finished = s.finish().then((n) => ((ended = true), n));
    await new Promise((r) => setTimeout(r, 150)); // the commit wait ran out long ago: the mark is what it waits on
    expect([ended, marks]).toEqual([false, [true]]);
    markDone();
    expect(await finished).toBe(42n);
  });

  it('lets the answer go after the wait when the database does not answer, the charge at risk until it lands', async () => {
    const writer = new ChargeWriter(() => quiet, { firstMs: 5, maxMs: 5, attempts: 100 });
    const { accounts, calls } = accountsOver(writer, 10);
    const s = settlementOf(accounts, 20);
    s.record(usage);
    const started = Date.now();
    expect(await s.finish()).toBe(42n);
    expect(Date.now() - started).toBeLessThan(500);
    expect(writer.stats()).toMatchObject({ pending: 1, atRisk: 1, failing: 1 });
    expect(writer.behind()).toBe(true);
    for (let i = 0; i < 200 && writer.stats().pending > 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(writer.stats()).toMatchObject({ pending: 0, atRisk: 0, failing: 0 });
    expect(calls.writes).toBe(11);
  });

  it('refuses new calls while an answer went out before its charge, even with no write failing (a hang)', async () => {
    const writer = new ChargeWriter(() => quiet, { firstMs: 5, maxMs: 5, attempts: 100 });
    const { accounts } = accountsOver(writer, 0, 300);
    const s = settlementOf(accounts, 20);
    s.record(usage);
    expect(await s.finish()).toBe(42n);
    expect(writer.stats()).toMatchObject({ pending: 1, atRisk: 1, failing: 0 });
    expect(writer.behind()).toBe(true);
    for (let i = 0; i < 200 && writer.stats().pending > 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(writer.behind()).toBe(false);
  });

  it('holds the answer until the commit when the spool cannot keep the charge: a kill then would leave it free', async () => {
    const brokenSpool = {
      keep: () => {
        throw new Error('EEXIST: charges is a file');
      },
      landed: () => undefined,
    } as unknown as ChargeSpool;
    const writer = new ChargeWriter(() => quiet, { firstMs: 5, maxMs: 5, attempts: 100 }, brokenSpool);
    const { accounts, calls } = accountsOver(writer, 0, 300);
    const s = settlementOf(accounts, 20);
    s.record(usage);
    const started = Date.now();
    expect(await s.finish()).toBe(42n);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(writer.stats()).toMatchObject({ pending: 0 });
    expect(calls.writes).toBe(1);
  });

  it('releases the hold when no usage was recorded; a failed release is left to the sweeper, not thrown', async () => {
    const writer = new ChargeWriter(() => quiet);
    const { accounts, calls } = accountsOver(writer, 0);
    expect(await settlementOf(accounts, 1_000).finish()).toBe(0n);
    expect(calls).toMatchObject({ release: 1, writes: 0 });
  });
});
