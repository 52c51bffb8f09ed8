// How many leases a process takes of one wallet for one vendor. A lease is money the wallet can no longer
// spend elsewhere (other processes, the exact path), so a process asks for another only when what its leases
// of the pair have left runs low, and never while its charges wait to be written (it could not use it).
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import type { BudgetLeases, LeaseHold, LeaseSettings } from '../../engine/money/leases.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp, withDrawsHeld } from '../helpers/ledger.ts';

const settings = (maxPendingDraws: number): LeaseSettings => ({
  sliceSeconds: 10,
  minSliceNano: 20_000n,
  maxShare: 0.25,
  ttlMs: 60_000,
  idleReturnMs: 30_000,
  maxPendingDraws,
});
const tick = (ms = 1) => new Promise((r) => setTimeout(r, ms));

async function holdWhenLeased(book: BudgetLeases, walletId: string, amount: bigint): Promise<LeaseHold> {
  for (let i = 0; i < 500; i++) {
    const h = await book.holdOrWait(walletId, 'b', amount);
    if (h) return h;
    await tick(5);
  }
  throw new Error('no lease was granted');
}

describeEachDatabase('leases per wallet and vendor', (getDb: () => Db) => {
  it('refills ahead of need with one more lease, not one per call admitted while the first runs low', async () => {
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'lease-count-test' });
    const w = await ledger.createWallet({ credits: 10_000 }); // 10,000,000 nano
    const book = budgetLeases(ledger, () => settings(1_024));
    let most = 0;
    let charged = 0n;
    try {
      for (let i = 0; i < 400; i++) {
        const h = await holdWhenLeased(book, w.id, 1_000n);
        charged += await book.charge(h, 900n, `call-${i}`, noRows()).committed;
        most = Math.max(most, book.stats().open);
        await tick(); // lets a lease being granted arrive, as calls' I/O would
      }
      await book.flushed();
      expect(most).toBeLessThanOrEqual(2);
      // What the leases hold beyond their draws is what they have left, not most of the wallet.
      const raw = await ledger.balance(w.id);
      expect(raw.reservedNano).toBeLessThan(10_000_000n / 4n);
    } finally {
      await book.close(5_000);
    }
    expect(charged).toBe(400n * 900n);
    expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 10_000_000n - charged, reservedNano: 0n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('asks for no lease while max_pending_draws charges wait to be written', async () => {
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'lease-count-test' });
    const w = await ledger.createWallet({ credits: 10_000 });
    const { ledger: slow, open } = withDrawsHeld(ledger);
    const book = budgetLeases(slow, () => settings(2));
    try {
      for (let i = 0; i < 2; i++) book.charge(await holdWhenLeased(book, w.id, 1_000n), 900n, `call-${i}`, noRows());
      expect(book.stats()).toMatchObject({ leases: 1, pendingDraws: 2 });
      for (let i = 0; i < 50; i++) {
        expect(await book.holdOrWait(w.id, 'b', 1_000n)).toBeNull(); // the exact path serves these
        await tick(2);
      }
      expect(book.stats()).toMatchObject({ leases: 1, open: 1 });
      const held = await getDb().query<{ n: string }>(
        `SELECT count(*)::text AS n FROM reservations WHERE wallet_id = $1 AND state = 'held'`,
        [w.id],
      );
      expect(held.rows[0]!.n).toBe('1');
    } finally {
      open();
      await book.close(5_000);
    }
    await expectJournalAddsUp(getDb(), w.id);
  });
});
