// Attack (budget leases, monthly-limited key on two processes): process A holds a lease of the key's monthly
// allowance; a call on process B that the key's month leaves room for (limit less finished use) was refused 429,
// "N more held by this key's calls still in progress", with no call in progress anywhere: B gave back only its
// own leases of the key, never asked A for its lease (as a call short of the wallet's money does). Found by the
// attack helper on PostgreSQL with two gateways: limit 100,000 credits, 1,750 used, A's idle lease holding
// 23,250, a call on B holding 78,505 refused until A's lease went back idle (30 s).
import { expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import type { BudgetLeases, LeaseSettings } from '../../engine/money/leases.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { HoldRenewals } from '../../engine/money/renewals.ts';
import { createWalletAccounts } from '../../engine/money/wallet-accounts.ts';
import { budgetLeases } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const M = 1_000_000n; // nano
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
const model = new Runtime({ config: 'config', catalog: 'catalog' }).snapshot().catalog.models.get('b-6')!;

describeEachDatabase('a monthly-limited key whose allowance another process leases', (getDb: () => Db) => {
  it('serves a call its month leaves room for, asking the other process for its lease of the key', async () => {
    const here = createLedger(getDb(), { clock: systemClock, owner: 'process-here' });
    const other = createLedger(getDb(), { clock: systemClock, owner: 'process-other' });
    const hereBook = budgetLeases(here, settings);
    const otherBook = budgetLeases(other, settings);
    const keys = createKeyService(getDb(), { clock: systemClock });
    try {
      const w = await here.createWallet();
      await here.topUp(w.id, { nano: 10_000n * M });
      const { key } = await keys.createApiKey(w.id, { name: 'shared', monthlyLimitCredits: 1_000_000 }); // 1,000 M nano
      let asks = 0;
      const accountsOf = (ledger: typeof here, book: BudgetLeases, otherBookOf: () => BudgetLeases) =>
        createWalletAccounts({
          keys,
          ledger,
          db: getDb(),
          clock: systemClock,
          suggestModel: () => undefined,
          log: quiet,
          writer: new ChargeWriter(() => quiet),
          renewals: new HoldRenewals(ledger, () => systemClock.now(), quiet),
          leases: {
            book,
            enabled: () => true,
            askOthersToReturn: async (walletId) => {
              asks++;
              setTimeout(() => void otherBookOf().returnWallet(walletId), 100);
            },
          },
        });
      const hereAccounts = accountsOf(here, hereBook, () => otherBook);
      const otherAccounts = accountsOf(other, otherBook, () => hereBook);
      const caller = await hereAccounts.authenticate({ authorization: `Bearer ${key}` });
      const otherCaller = await otherAccounts.authenticate({ authorization: `Bearer ${key}` });

      // The other process admits one call of 100 M on a lease of the key's allowance (half the room: 500 M) and
      // charges it 10 M: its idle lease holds 490 M of the key's month.
      const first = await otherAccounts.admit(otherCaller, model, 100n * M, 'other-call');
      await otherAccounts.charge(otherCaller, first, 10n * M).committed;
      await otherBook.flushed();
      const leased = await getDb().query<{ n: string }>(
        `SELECT coalesce(sum(amount_nano), 0)::text AS n FROM reservations WHERE call_id LIKE 'lease:%' AND state = 'held'`,
      );
      expect(BigInt(leased.rows[0]!.n)).toBe(490n * M);

      // Here: a call of 600 M. The month leaves 990 M (limit 1,000 M, 10 M used); no call is in progress.
      const big = await hereAccounts.admit(caller, model, 600n * M, 'big-call').then(
        (hold) => ({ status: 200, hold }),
        (e: { status?: number; message?: string }) => ({ status: e.status ?? 0, hold: null, message: e.message }),
      );
      expect(big, 'refused while no call of the key was in progress').toMatchObject({ status: 200 });
      expect(asks).toBeGreaterThan(0);
      await hereAccounts.charge(caller, big.hold!, 600n * M).committed;
      await hereBook.flushed();
      await otherBook.returnWallet(w.id);
      await hereBook.returnWallet(w.id);
      await sleep(50);
      const bal = await here.balance(w.id);
      expect(bal).toMatchObject({ availableNano: 10_000n * M - 610n * M, reservedNano: 0n });
      await expectJournalAddsUp(getDb(), w.id);
    } finally {
      await hereBook.close(5_000);
      await otherBook.close(5_000);
      await keys.close();
    }
  }, 20_000);
});
