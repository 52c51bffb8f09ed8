// BudgetLeases for the tests that drive them directly, built as the gateway builds them (engine/money/ledger-wiring.ts):
// a charge writer and hold renewals of their own, on the system clock, logging nowhere.
import { systemClock } from '../../engine/core/clock.ts';
import { type ChargeRowLadder, ladderFor } from '../../engine/money/charge-first.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import { BudgetLeases, type LeaseSettings } from '../../engine/money/leases.ts';
import { HoldRenewals } from '../../engine/money/renewals.ts';
import type { Ledger, MoneyLog } from '../../engine/money/types.ts';

const quiet: MoneyLog = { warn: () => {}, error: () => {} };

/** `writer`: a charge writer of the test's own (its retry policy, say). */
export function budgetLeases(ledger: Ledger, settings: () => LeaseSettings, writer = new ChargeWriter(() => quiet)): BudgetLeases {
  return new BudgetLeases(ledger, systemClock, settings, quiet, writer, new HoldRenewals(ledger, () => systemClock.now(), quiet));
}

/** The charge rows of a leased call that writes none, as the accounts build them (wallet-accounts.ts); logged nowhere. */
export const noRows = (): ChargeRowLadder => ladderFor(undefined, quiet, 'a leased call');

/** Asks for a lease of the pair, holding nothing on it: resolves once one is granted, or none was. */
export async function askForLease(book: BudgetLeases, walletId: string, vendor: string, amountNano: bigint): Promise<void> {
  const h = await book.holdOrWait(walletId, vendor, amountNano);
  if (h) book.release(h);
}
