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

export function startUsagePruning(db: Db, clock: Clock, keepDays: () => number, onError: (e: unknown) => void): () => void {
  const run = () => {
    const before = new Date(clock.now().getTime() - keepDays() * 86_400_000);
    pruneUsageRecords(db, before).catch(onError);
    pruneDraws(db, before).catch(onError);
    // The audit trail is kept as long as the usage records it explains, never shorter.
    pruneAudit(db, before).catch(onError);
  };
  run();
  const timer = setInterval(run, PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
