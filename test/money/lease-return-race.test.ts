// Two calls of one process short of money that sits in another process's lease: both ask for it back and wait.
// Money enough for one call comes back first (another call's hold ends), and both leave the wait; the one that
// loses the race to reserve it must wait for the rest, not be refused 402 while the other process's lease is
// about to come back (found by the attack helper under load: 2 of 600 calls on a wallet covering all 600).

import { expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import type { LeaseSettings } from '../../engine/money/leases.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { HoldRenewals } from '../../engine/money/renewals.ts';
import { createWalletAccounts } from '../../engine/money/wallet-accounts.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const UNIT = 1_000_000n;
const CALL = 15n * UNIT;
const settings = (): LeaseSettings => ({
  sliceSeconds: 10,
  minSliceNano: 1_000n,
  maxShare: 0.5,
  ttlMs: 60_000,
  idleReturnMs: 30_000,
  maxPendingDraws: 1_024,
});
const quiet = { warn: () => {}, error: () => {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const speechModel = new Runtime({ config: 'config', catalog: 'catalog' }).snapshot().catalog.models.get('tts-1')!;
/** The other process handles a request to give back its leases this late (a loaded process), inside the wait. */
const OTHER_ANSWERS_MS = 400;
/** This process's reserves answer this late, as behind a busy batch queue (85 to 255 ms in the helper's traces). */
const RESERVE_LATE_MS = 150;

describeEachDatabase('calls waiting together for another process to give a lease back', (getDb: () => Db) => {
  it('are all served once the money comes back, though only one fits what came back first', async () => {
    const here = createLedger(getDb(), { clock: systemClock, owner: 'process-here' });
    const other = createLedger(getDb(), { clock: systemClock, owner: 'process-other' });
    const hereBook = budgetLeases(here, settings);
    const otherBook = budgetLeases(other, settings);
    const keys = createKeyService(getDb(), { clock: systemClock });
    try {
      const w = await here.createWallet();
      await here.topUp(w.id, { nano: 16n * CALL }); // 240 units
      const { key } = await keys.createApiKey(w.id, { name: 'race' });
      let asks = 0;
      const lateReserves = Object.create(here, {
        reserve: { value: async (...a: Parameters<typeof here.reserve>) => (await sleep(RESERVE_LATE_MS), here.reserve(...a)) },
      });
      const accounts = createWalletAccounts({
        keys,
        ledger: lateReserves,
        db: getDb(),
        clock: systemClock,
        suggestModel: () => undefined,
        log: quiet,
        writer: new ChargeWriter(() => quiet),
        renewals: new HoldRenewals(here, () => systemClock.now(), quiet),
        leases: {
          book: hereBook,
          enabled: () => true,
          askOthersToReturn: async (walletId) => {
            asks++;
            setTimeout(() => void otherBook.returnWallet(walletId), OTHER_ANSWERS_MS);
          },
        },
      });
      // The other process leases 120 units (8 calls) and spends one call of it.
      const first = await otherBook.holdOrWait(w.id, 'b', CALL);
      expect(first, 'the other process took no lease').not.toBeNull();
      await otherBook.charge(first!, CALL, 'other-call', noRows()).committed;
      await otherBook.flushed();
      // Here, calls in flight hold the rest: 103 + 17 units; this process leases nothing for a while.
      await hereBook.returnWallet(w.id);
      const long = await here.reserve({ walletId: w.id, vendor: 'b', amountNano: 103n * UNIT, callId: 'in-flight-1' });
      const short = await here.reserve({ walletId: w.id, vendor: 'b', amountNano: 17n * UNIT, callId: 'in-flight-2' });
      if (!long.ok || !short.ok) throw new Error('the calls in flight were not held');
      const caller = await accounts.authenticate({ authorization: `Bearer ${key}` });
      const waiting = ['x1', 'x2'].map((id) =>
        accounts.admit(caller, speechModel, CALL, id).then(
          (hold) => ({ status: 200, hold }),
          (e: { status?: number }) => ({ status: e.status ?? 0, hold: null }),
        ),
      );
      // Both have asked the other process and wait; then the 17-unit call ends uncharged: one call's worth is back.
      for (let i = 0; i < 300 && asks < 2; i++) await sleep(10);
      expect(asks).toBe(2);
      await sleep(60);
      await here.release(short.reservation);
      const answers = await Promise.all(waiting);
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      for (const a of answers) await accounts.charge(caller, a.hold!, CALL);
      await here.release(long.reservation);
      await otherBook.returnWallet(w.id);
      // Three calls charged; nothing held once the other process's lease is back.
      expect(await here.balance(w.id)).toMatchObject({ availableNano: 13n * CALL, reservedNano: 0n });
      await expectJournalAddsUp(getDb(), w.id);
    } finally {
      await hereBook.close(5_000);
      await otherBook.close(5_000);
      await keys.close();
    }
  }, 20_000);
});
