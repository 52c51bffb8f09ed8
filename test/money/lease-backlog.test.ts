// The bound on charges decided and not yet written (billing.yaml `leases.max_pending_draws`): what a SIGKILL can
// leave uncharged. Past it a call is not admitted on the lease (it takes the exact path); once the writes
// catch up, leased calls resume. The database here is made slow by holding the draws' writes back.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import type { LeaseHold, LeaseSettings } from '../../engine/money/leases.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp, withDrawsHeld } from '../helpers/ledger.ts';

const settings = (maxPendingDraws: number): LeaseSettings => ({
  sliceSeconds: 10,
  minSliceNano: 1_000_000n,
  maxShare: 0.25,
  ttlMs: 60_000,
  idleReturnMs: 30_000,
  maxPendingDraws,
});

describeEachDatabase('the backlog of draws not yet written', (getDb: () => Db) => {
  it('admits no call on a lease while max_pending_draws charges wait to be written, and admits again once they are', async () => {
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'backlog-test' });
    const w = await ledger.createWallet({ credits: 100_000 }); // 100,000,000 nano
    // The draws' writes wait at a gate, as they would behind a slow database.
    const { ledger: slow, open } = withDrawsHeld(ledger);
    const book = budgetLeases(slow, () => settings(3));
    try {
      const hold = async (): Promise<LeaseHold> => {
        for (let i = 0; i < 200; i++) {
          const h = await book.holdOrWait(w.id, 'b', 10_000n);
          if (h) return h;
          await new Promise((r) => setTimeout(r, 10));
        }
        throw new Error('no lease was granted');
      };
      const waiting = [];
      for (let i = 0; i < 3; i++) waiting.push(book.charge(await hold(), 4_000n, `call-${i}`, noRows()).committed);
      expect(book.stats().pendingDraws).toBe(3);
      // The fourth call is not admitted on the lease, though the lease could pay it.
      expect(await book.holdOrWait(w.id, 'b', 10_000n)).toBeNull();
      expect(book.stats()).toMatchObject({ pendingDraws: 3, missed: expect.any(Number) });

      open();
      expect(await Promise.all(waiting)).toEqual([4_000n, 4_000n, 4_000n]);
      await book.flushed();
      expect(book.stats().pendingDraws).toBe(0);
      const again = await book.holdOrWait(w.id, 'b', 10_000n);
      expect(again).not.toBeNull();
      expect(await book.charge(again!, 4_000n, 'call-3', noRows()).committed).toBe(4_000n);
      await book.flushed();
    } finally {
      open();
      await book.close(5_000);
    }
    const charged = await getDb().query<{ n: string; s: string }>(
      'SELECT count(*)::text AS n, sum(amount_nano)::text AS s FROM reservation_draws',
    );
    expect(charged.rows[0]).toEqual({ n: '4', s: '16000' });
    expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 100_000_000n - 16_000n, reservedNano: 0n });
    await expectJournalAddsUp(getDb(), w.id);
  });
});
