// The audit trail is pruned by the usage records' sweeper: after `limits.audit_record_days`, and never
// before the usage records' own period (`limits.usage_record_days`) has passed.
import { expect, it } from 'vitest';
import { listAudit } from '../../engine/audit/query.ts';
import { CLI_OPERATOR, recordAudit } from '../../engine/audit/trail.ts';
import type { Db } from '../../engine/db/db.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import { startUsageRecordUpkeep } from '../../engine/usage/retention.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const NOW = new Date('2026-11-21T03:00:00Z');
const daysAgo = (n: number) => new Date(NOW.getTime() - n * 86_400_000);

/** A wallet with one entry per age (days), then one pruning run; the ages left once it has settled. */
async function agesLeftAfterPruning(db: Db, ages: number[], usageDays: number, auditDays: number | undefined): Promise<number[]> {
  const walletId = `w_retention_${Math.random().toString(36).slice(2, 8)}`;
  for (const age of ages) {
    await recordAudit(db, CLI_OPERATOR, { walletId, action: 'key.closed', targetId: String(age), before: null, after: null }, daysAgo(age));
  }
  const errors: unknown[] = [];
  const stop = await startUsageRecordUpkeep(db, fixedClock(NOW), () => usageDays, (e) => errors.push(e), () => auditDays);
  stop();
  // The run's deletes are not awaited by the sweeper: wait until two reads agree.
  let last = '';
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 40));
    const now = JSON.stringify((await listAudit(db, walletId, { limit: 10, offset: 0 })).data.map((e) => Number(e.target_id)).sort((a, b) => a - b));
    if (now === last) break;
    last = now;
  }
  expect(errors).toEqual([]);
  return JSON.parse(last);
}

describeEachDatabase('audit retention', (getDb) => {
  it('without audit_record_days the trail goes with the usage records', async () => {
    expect(await agesLeftAfterPruning(getDb(), [89, 91], 90, undefined)).toEqual([89]);
  });

  it('audit_record_days keeps it longer, and a shorter one does not cut it below the usage records', async () => {
    expect(await agesLeftAfterPruning(getDb(), [89, 91, 150], 90, 120)).toEqual([89, 91]);
    expect(await agesLeftAfterPruning(getDb(), [29, 31, 89, 91], 90, 30)).toEqual([29, 31, 89]);
  });
});
