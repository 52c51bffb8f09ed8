// The audit trail is pruned by the usage records' sweeper: after `limits.audit_record_days`, and never
// before the usage records' own period (`limits.usage_record_days`) has passed.
import { expect, it, vi } from 'vitest';
import { listAudit } from '../../engine/audit/query.ts';
import { CLI_OPERATOR, recordAudit } from '../../engine/audit/trail.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { startUsageRecordUpkeep } from '../../engine/usage/retention.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const NOW = new Date('2026-11-21T03:00:00Z');
const daysAgo = (n: number) => new Date(NOW.getTime() - n * 86_400_000);

/**
 * A wallet with one entry per age (days), then one pruning run; the ages left once it has settled, which must be
 * `expected`. The run's deletes are not awaited by the sweeper (and on PostgreSQL the records' own prune, which
 * runs beside the audit's, takes its time), so wait until the trail reads `expected`, then a while more, and
 * return what is there: a sweeper that deleted more would show it.
 */
async function expectAgesLeftAfterPruning(
  db: Db,
  ages: number[],
  usageDays: number,
  auditDays: number | undefined,
  expected: number[],
): Promise<void> {
  const walletId = `w_retention_${Math.random().toString(36).slice(2, 8)}`;
  for (const age of ages) {
    await recordAudit(db, CLI_OPERATOR, { walletId, action: 'key.closed', targetId: String(age), before: null, after: null }, daysAgo(age));
  }
  const errors: unknown[] = [];
  const limits = () => ({ usage_record_days: usageDays, ...(auditDays === undefined ? {} : { audit_record_days: auditDays }) });
  const stop = await startUsageRecordUpkeep(db, fixedClock(NOW), limits, { error: (o) => errors.push(o) });
  stop();
  const left = async () =>
    (await listAudit(db, walletId, { limit: 10, offset: 0 })).data.map((e) => Number(e.target_id)).sort((a, b) => a - b);
  await vi.waitFor(async () => expect(await left()).toEqual(expected), { timeout: 10_000, interval: 40 });
  await new Promise((r) => setTimeout(r, 300));
  expect(errors).toEqual([]);
  expect(await left()).toEqual(expected);
}

describeEachDatabase('audit retention', (getDb) => {
  it('without audit_record_days the trail goes with the usage records', async () => {
    await expectAgesLeftAfterPruning(getDb(), [89, 91], 90, undefined, [89]);
  });

  it('audit_record_days keeps it longer, and a shorter one does not cut it below the usage records', async () => {
    await expectAgesLeftAfterPruning(getDb(), [89, 91, 150], 90, 120, [89, 91]);
    await expectAgesLeftAfterPruning(getDb(), [29, 31, 89, 91], 90, 30, [29, 31, 89]);
  });
});
