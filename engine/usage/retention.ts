// Usage records past `limits.usage_record_days`, and the per-call trails kept as long (rollup, stored vendor
// answers, lease draws, the wallets' audit trail), are removed hourly. The same run makes the coming days'
// partitions, and the start waits for the first: a record with no partition to go to would fail its charge.

import { pruneAudit } from '../audit/query.ts';
import type { Clock } from '../core/clock.ts';
import { koreanDate, koreanMonthDays, startOfKoreanDay } from '../core/clock.ts';
import type { LimitsFile } from '../core/schema-types.ts';
import type { Db } from '../db/db.ts';
import { pruneDraws } from '../money/draw-retention.ts';
import { pruneDailyRollup } from './daily-rollup.ts';
import { type PruneOutcome, type UsageRecordStorage, usageRecordStorage } from './record-storage.ts';
import { pruneVendorResponses } from './vendor-responses.ts';

const UPKEEP_EVERY_MS = 3_600_000;

/**
 * Removes the records (whole Korean days) and rollup days before `before`. The rollup keeps at least the Korean
 * month of `now` and the one before it, whatever `before` says: the keys' month figures are its sums (engine/keys/
 * key-use.ts), and a reserve decided just before a month's end may still be counted against that month.
 */
export async function pruneUsageRecords(db: Db, before: Date, storage?: UsageRecordStorage, now = new Date()): Promise<PruneOutcome> {
  const outcome = await (storage ?? (await usageRecordStorage(db))).prune(before);
  const lastMonth = koreanMonthDays(new Date(startOfKoreanDay(koreanMonthDays(now).from).getTime() - 1)).from;
  const rollupBefore = koreanDate(before);
  await pruneDailyRollup(db, rollupBefore < lastMonth ? rollupBefore : lastMonth);
  return outcome;
}

/** The two periods of limits.yaml the upkeep keeps to, read from the running snapshot at each run. */
type KeepDays = Pick<LimitsFile, 'usage_record_days' | 'audit_record_days'>;

/**
 * Makes the coming days' room now, then keeps records hourly; resolves once the first room is made.
 * The audit trail is kept `audit_record_days`, never shorter than the usage records, whose calls its changes
 * explain (a limit raised, a key closed).
 */
export async function startUsageRecordUpkeep(
  db: Db,
  clock: Clock,
  limits: () => KeepDays,
  log: { error: (o: object, m: string) => void },
): Promise<() => void> {
  const storage = await usageRecordStorage(db);
  await storage.prepare(clock.now());
  const onError = (err: unknown) => log.error({ err }, 'pruning usage records failed');
  const daysAgo = (days: number) => new Date(clock.now().getTime() - days * 86_400_000);
  const prune = () => {
    const { usage_record_days: usageDays, audit_record_days: auditDays } = limits();
    const before = daysAgo(usageDays);
    pruneUsageRecords(db, before, storage, clock.now()).catch(onError);
    pruneDraws(db, before).catch(onError);
    pruneVendorResponses(db, before).catch(onError);
    pruneAudit(db, daysAgo(Math.max(usageDays, auditDays ?? usageDays))).catch(onError);
  };
  prune();
  const timer = setInterval(() => {
    storage.prepare(clock.now()).catch(onError);
    prune();
  }, UPKEEP_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
