// One process's budget leases: settings read from billing.yaml at each use (a reload applies to the next call), and
// the channel on which a process short of a wallet's money asks the others for their leases of it.
import type { Clock } from '../core/clock.ts';
import { creditsToNano } from '../core/money.ts';
import type { BillingFile } from '../core/schema-types.ts';
import type { Db } from '../db/db.ts';
import type { AdmissionLeases } from './admission.ts';
import type { ChargeWriter } from './charge-writer.ts';
import { BudgetLeases, DEFAULT_MAX_PENDING_DRAWS, type LeaseSettings } from './leases.ts';
import type { HoldRenewals } from './renewals.ts';
import type { Ledger, MoneyLog } from './types.ts';

export const LEASE_RETURN_CHANNEL = 'gateway_lease_return';

export type LeaseConfig = NonNullable<BillingFile['leases']>;

const OFF: LeaseConfig = {
  enabled: false,
  slice_seconds: 10,
  min_slice_credits: 100_000,
  max_share: 0.25,
  ttl_ms: 60_000,
  idle_return_ms: 30_000,
};

const settingsOf = (c: LeaseConfig): LeaseSettings => ({
  sliceSeconds: c.slice_seconds,
  minSliceNano: creditsToNano(c.min_slice_credits),
  maxShare: c.max_share,
  ttlMs: c.ttl_ms,
  idleReturnMs: c.idle_return_ms,
  maxPendingDraws: c.max_pending_draws ?? DEFAULT_MAX_PENDING_DRAWS,
});

export interface GatewayLeases extends AdmissionLeases {
  /** Starts listening for other processes' requests to give a wallet's leases back. */
  listen(): Promise<void>;
}

export function gatewayLeases(
  db: Db,
  ledger: Ledger,
  clock: Clock,
  config: () => LeaseConfig | undefined,
  log: MoneyLog,
  writer: ChargeWriter,
  renewals: HoldRenewals,
): GatewayLeases {
  // Read on every call admitted on a lease: converted again only when a reload brought another config.
  let last: { config: LeaseConfig; settings: LeaseSettings } | undefined;
  const settings = (): LeaseSettings => {
    const c = config() ?? OFF;
    if (last?.config !== c) last = { config: c, settings: settingsOf(c) };
    return last.settings;
  };
  const book = new BudgetLeases(ledger, clock, settings, log, writer, renewals);
  return {
    book,
    enabled: () => config()?.enabled ?? false,
    askOthersToReturn: (walletId) => db.notify(LEASE_RETURN_CHANNEL, walletId),
    async listen() {
      // Asks lost while the listener was reconnecting cannot be told apart: every lease goes back then.
      await db.listen(
        LEASE_RETURN_CHANNEL,
        (walletId) => void book.returnWallet(walletId),
        () => void book.returnEveryWallet(),
      );
    },
  };
}
