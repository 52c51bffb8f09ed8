// Usage records older than `limits.usage_record_days` are removed every hour (and once at start), read at each
// run so a reload that changes the period applies without a restart, and so are the budget leases' draws,
// the other per-call trail (engine/money/draw-retention.ts), and the wallets' audit trail (engine/audit). Several processes pruning at once delete the
// same rows harmlessly.
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import { pruneDraws } from '../money/draw-retention.ts';
import { pruneUsageRecords } from './records.ts';
import { pruneAudit } from '../audit/query.ts';

const PRUNE_EVERY_MS = 3_600_000;

/**
 * `auditKeepDays`: how long the audit trail is kept (`limits.audit_record_days`); never shorter than the usage
 * records, whose calls its changes explain (a limit raised, a key closed).
 */
export function startUsagePruning(
  db: Db,
  clock: Clock,
  keepDays: () => number,
  onError: (e: unknown) => void,
  auditKeepDays: () => number | undefined = () => undefined,
): () => void {
  const daysAgo = (days: number) => new Date(clock.now().getTime() - days * 86_400_000);
  const run = () => {
    const usageDays = keepDays();
    const before = daysAgo(usageDays);
    pruneUsageRecords(db, before).catch(onError);
    pruneDraws(db, before).catch(onError);
    pruneAudit(db, daysAgo(Math.max(usageDays, auditKeepDays() ?? usageDays))).catch(onError);
  };
  run();
  const timer = setInterval(run, PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
