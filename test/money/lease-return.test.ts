// A process asked to give a wallet's leases back (another process is short of the wallet's money, or this one
// is) gives back what no call of its own still needs at once, even while its draws wait to be written: on a
// loaded machine the draws' queue can be seconds behind, and a call waiting for the money would be refused
// (402) although the wallet could pay it. What the unwritten draws need stays held until they are written.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { leaseSettings } from '../helpers/lease-settings.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const settings = leaseSettings({ maxShare: 0.5 });
const DRAWS_WAIT_MS = 3_000;

describeEachDatabase('giving a lease back while its draws wait', (getDb: () => Db) => {
  it('returns the unspent part at once and keeps what the unwritten draws need until they are written', async () => {
    // Draws wait DRAWS_WAIT_MS after the last draws batch: the test's draws stay unwritten meanwhile.
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'lease-return-test', drawFlushMs: () => DRAWS_WAIT_MS });
    const w = await ledger.createWallet({ credits: 10_000 }); // 10,000,000 nano
    const book = budgetLeases(ledger, () => settings);
    try {
      const first = await book.holdOrWait(w.id, 'b', 100_000n);
      expect(first, 'the first call was not leased').not.toBeNull();
      await book.charge(first!, 60_000n, 'first-draw', noRows()).committed;
      await book.flushed(); // written at once, nothing having been drawn lately: the next draws wait DRAWS_WAIT_MS
      const second = await book.holdOrWait(w.id, 'b', 100_000n);
      expect(second, 'the second call was not leased').not.toBeNull();
      const waitingDraw = book.charge(second!, 70_000n, 'waiting-draw', noRows());
      const granted = (await ledger.balance(w.id)).reservedNano;
      expect(granted).toBeGreaterThan(70_000n);
      const asked = Date.now();
      const returning = book.returnWallet(w.id);
      // Everything the calls did not spend comes back well before the waiting draw's batch is due. PostgreSQL:
      // the draw's 70,000 stays held until it is written. PGlite: the trim's batch takes the waiting draw along.
      const spendable = 10_000_000n - 60_000n - 70_000n;
      let bal = await ledger.balance(w.id);
      while (bal.availableNano !== spendable && Date.now() - asked < DRAWS_WAIT_MS - 500) {
        await new Promise((r) => setTimeout(r, 20));
        bal = await ledger.balance(w.id);
      }
      expect(bal.availableNano, 'the lease was not given back until its draws were written').toBe(spendable);
      expect(bal.reservedNano).toBe(getDb().kind === 'postgres' ? 70_000n : 0n);
      await returning;
      // The busy lease goes back once its draw is written, in the background.
      expect(await waitingDraw.committed).toBe(70_000n);
      for (let i = 0; i < 100 && (await ledger.balance(w.id)).reservedNano > 0n; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 10_000_000n - 130_000n, reservedNano: 0n });
    } finally {
      await book.close(10_000);
    }
    await expectJournalAddsUp(getDb(), w.id);
  }, 20_000);
});
