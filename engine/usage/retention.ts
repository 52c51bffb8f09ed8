// Usage records older than `limits.usage_record_days` are removed every hour (and once at start), read at each
// run so a reload that changes the period applies without a restart. Several processes pruning at once
// delete the same rows harmlessly.
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import { pruneUsageRecords } from './records.ts';

const PRUNE_EVERY_MS = 3_600_000;

export function startUsagePruning(db: Db, clock: Clock, keepDays: () => number, onError: (e: unknown) => void): () => void {
  const run = () => {
    const before = new Date(clock.now().getTime() - keepDays() * 86_400_000);
    pruneUsageRecords(db, before).catch(onError);
  };
  run();
  const timer = setInterval(run, PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
