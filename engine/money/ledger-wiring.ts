// The money side of one gateway process, from billing.yaml and limits.yaml: the ledger, the charge writer, the
// leases, the sweeper, the expiry pass, the audit, and the wallet accounts calls see over them.
import { vendorIdsOf } from '../catalog/config.ts';
import type { Runtime } from '../catalog/runtime.ts';
import type { Clock } from '../core/clock.ts';
import type { ChargeRowWriter } from '../db/charge-rows.ts';
import type { Db } from '../db/db.ts';
import type { KeyService } from '../keys/index.ts';
import type { Accounts } from './accounts.ts';
import type { WalletAccountsDeps } from './admission.ts';
import { DEFAULT_AUDIT_INTERVAL_MS, HOLD_GRACE_SWEEPS, LedgerAuditor } from './audit.ts';
import { databaseAuditTurn } from './audit-turn.ts';
import { DEFAULT_DRAW_FLUSH_MS, DEFAULT_WALLET_QUEUES } from './batch-queues.ts';
import { ChargeSpool } from './charge-spool.ts';
import { ChargeWriter } from './charge-writer.ts';
import { KeptHolds } from './kept-holds.ts';
import { type GatewayLeases, gatewayLeases } from './lease-wiring.ts';
import { createLedger } from './ledger.ts';
import { startLotExpiry } from './lot-expiry.ts';
import { HoldRenewals } from './renewals.ts';
import { CHARGE_RETRY } from './retry.ts';
import { type SpoolReplay, startSpoolReplay } from './spool-replay.ts';
import { startSweeper } from './sweep.ts';
import type { Ledger, MoneyLog } from './types.ts';
import { createWalletAccounts } from './wallet-accounts.ts';

/** How long charges still waiting for the database, and leases' last draws, get at a stop before it closes. */
export const CHARGE_DRAIN_MS = 5_000;

/** The expiry pass's longest interval: a lot's remainder leaves the balance within a minute of its expiry. */
const LOT_EXPIRY_MAX_INTERVAL_MS = 30_000;

export interface GatewayMoney {
  ledger: Ledger;
  writer: ChargeWriter;
  leases: GatewayLeases;
  /** The periodic audit of the ledger's invariants (billing.yaml `ledger.audit_interval_ms`). */
  audit: LedgerAuditor;
  /** The accounts every call is admitted and charged through. */
  accounts(keys: KeyService, suggestModel: WalletAccountsDeps['suggestModel']): Accounts;
  /**
   * Starts the audit, the replay of charges a dead process spooled, and unless `sweeper` is false (tests that move time
   * by hand) the sweeper and the expiry pass; `expired` hears of each wallet whose lot this process expired.
   */
  start(sweeper: boolean, rowWriters: readonly ChargeRowWriter<unknown>[], expired?: (walletId: string) => void): void;
  /** Stops the timers; resolves once an audit still reading has ended (await it before the database closes). */
  stopTimers(): Promise<void>;
  /** Once every call has ended: the charges waiting for the database and the leases get their last chance. */
  drain(): Promise<void>;
}

/** `log` is read at each use (the app's once it exists); `spoolDir`: GATEWAY_DATA_DIR/charges, or null: memory only. */
export function gatewayMoney(db: Db, runtime: Runtime, clock: Clock, log: () => MoneyLog, spoolDir: string | null): GatewayMoney {
  const limits = runtime.snapshot().config.limits;
  const billing = () => runtime.snapshot().config.billing;
  const moneyLog: MoneyLog = { warn: (o, m) => log().warn(o, m), error: (o, m) => log().error(o, m) };
  const ledger = createLedger(db, {
    clock,
    log: moneyLog,
    reservationTtlMs: limits.reservation_ttl_ms,
    planVendors: () => billing().plan_restricted_vendors,
    vendors: () => vendorIdsOf(runtime.snapshot().config),
    drawFlushMs: () => billing().leases?.flush_ms ?? DEFAULT_DRAW_FLUSH_MS,
    walletQueues: () => billing().ledger?.queues ?? DEFAULT_WALLET_QUEUES,
    flushWal: () => billing().ledger?.synchronous_commit !== 'off',
  });
  const spool = spoolDir === null ? null : new ChargeSpool(spoolDir, ledger.owner);
  const keptHolds = new KeptHolds(
    (id, kept) => ledger.keepHeld([id], kept),
    (err, reservationId) => log().warn({ err, reservationId }, 'the mark of a hold kept charges owe is not written yet'),
  );
  const writer = new ChargeWriter(log, CHARGE_RETRY, spool, keptHolds);
  const renewals = new HoldRenewals(ledger, () => clock.now(), moneyLog);
  const leases = gatewayLeases(db, ledger, clock, () => billing().leases, moneyLog, writer, renewals);
  const audit = new LedgerAuditor({
    db,
    clock,
    holdGraceMs: HOLD_GRACE_SWEEPS * limits.sweep_interval_ms,
    log,
    turn: databaseAuditTurn(db),
  });
  let stopSweeper: () => void = () => undefined;
  let replay: SpoolReplay | null = null;
  return {
    ledger,
    writer,
    leases,
    audit,
    accounts: (keys, suggestModel) =>
      createWalletAccounts({ keys, ledger, db, clock, writer, renewals, leases, log: moneyLog, suggestModel }),
    start(sweeper, rowWriters, expired) {
      const onError = (e: unknown, expire?: { reservationId: string; walletId: string }) =>
        log().error({ err: e, ...expire }, expire ? 'sweep: expiring a reservation failed' : 'sweep failed');
      if (sweeper) {
        const sweep = startSweeper(ledger, limits.sweep_interval_ms, onError);
        const expiry = startLotExpiry({
          db,
          owner: ledger.owner,
          clock,
          intervalMs: Math.min(limits.sweep_interval_ms, LOT_EXPIRY_MAX_INTERVAL_MS),
          report: (err, lotId) => log().error({ err, lotId }, 'lot expiry failed'),
          expired: (e) => expired?.(e.walletId),
        });
        stopSweeper = () => {
          sweep();
          expiry();
        };
      }
      audit.start(billing().ledger?.audit_interval_ms ?? DEFAULT_AUDIT_INTERVAL_MS);
      const unwritable = spool?.unwritable();
      if (unwritable)
        log().error({ reason: unwritable }, 'the charge spool cannot be written: answers will wait for their charges to commit');
      if (spool) replay = startSpoolReplay({ spool, ledger, db, clock, rowWriters, log });
    },
    async stopTimers() {
      stopSweeper();
      await Promise.all([audit.stop(), replay?.stop()]);
    },
    async drain() {
      await writer.drain(CHARGE_DRAIN_MS);
      await leases.book.close(CHARGE_DRAIN_MS);
    },
  };
}
