// A lease is renewed while its calls run, in the same renewals as calls' own holds (renewals.ts): a call on a lease
// that outlives the lease's ttl keeps its money, and is charged from the lease. A lease found no longer held (swept,
// or finished by another process) admits no more calls.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { leaseSettings } from '../helpers/lease-settings.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const TTL_MS = 600;
const settings = leaseSettings({ minSliceNano: 200_000n, maxShare: 0.5, ttlMs: TTL_MS, idleReturnMs: 60_000 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function leasedCall(db: Db, owner: string) {
  const ledger = createLedger(db, { clock: systemClock, owner });
  const w = await ledger.createWallet({ credits: 1_000 }); // 1,000,000 nano: the lease takes half
  const book = budgetLeases(ledger, () => settings);
  const hold = await book.holdOrWait(w.id, 'b', 50_000n); // waits for the lease it asks for
  if (!hold) throw new Error('no lease was granted');
  return { ledger, w, book, hold, leaseId: hold.lease.reservation.id };
}

const stateOf = async (db: Db, id: string) =>
  (await db.query<{ state: string }>('SELECT state FROM reservations WHERE id = $1', [id])).rows[0]?.state;

describeEachDatabase('a lease', (getDb: () => Db) => {
  it('is renewed while its call runs past its ttl, and the call is charged from it', async () => {
    const { ledger, w, book, hold, leaseId } = await leasedCall(getDb(), 'lease-renewed');
    try {
      for (let i = 0; i < 6; i++) {
        await sleep(TTL_MS / 2);
        await ledger.sweepExpired();
      }
      expect(await stateOf(getDb(), leaseId)).toBe('held');
      expect(await book.charge(hold, 40_000n, 'long-leased-call', noRows()).committed).toBe(40_000n);
      const drawn = await getDb().query<{ charged_nano: string }>('SELECT charged_nano::text FROM reservations WHERE id = $1', [leaseId]);
      expect(drawn.rows[0]!.charged_nano).toBe('40000'); // drawn from the lease, not from available balance
    } finally {
      await book.close(5_000);
    }
    expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 1_000_000n - 40_000n, reservedNano: 0n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('admits no more calls once it is found no longer held', async () => {
    const { ledger, w, book, hold, leaseId } = await leasedCall(getDb(), 'lease-lost');
    try {
      await ledger.release(leaseId); // as another process's sweeper would, had this one stalled
      await sleep(TTL_MS);
      expect(hold.lease.open).toBe(false);
      const next = await book.holdOrWait(w.id, 'b', 50_000n);
      expect(next?.lease).not.toBe(hold.lease);
      if (next) book.release(next);
      // Its call is still charged: from available balance, the lease's hold being gone.
      expect(await book.charge(hold, 40_000n, 'call-on-lost-lease', noRows()).committed).toBe(40_000n);
    } finally {
      await book.close(5_000);
    }
    await expectJournalAddsUp(getDb(), w.id);
  });
});
