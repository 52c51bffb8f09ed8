// The audit trail is pruned by the usage records' sweeper, with their cut-off: an entry older than
// `limits.usage_record_days` goes, a younger one stays.
import { expect, it } from 'vitest';
import { listAudit } from '../../engine/audit/query.ts';
import { CLI_OPERATOR, recordAudit } from '../../engine/audit/trail.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import { startUsagePruning } from '../../engine/usage/retention.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const NOW = new Date('2026-11-21T03:00:00Z');
const daysAgo = (n: number) => new Date(NOW.getTime() - n * 86_400_000);

describeEachDatabase('audit retention', (getDb) => {
  it('the usage sweeper removes entries past the usage records’ period and keeps the rest', async () => {
    const db = getDb();
    const walletId = `w_retention_${Math.random().toString(36).slice(2, 8)}`;
    const change = (targetId: string) => ({ walletId, action: 'key.closed' as const, targetId, before: null, after: { status: 'closed' } });
    await recordAudit(db, CLI_OPERATOR, change('old'), daysAgo(91));
    await recordAudit(db, CLI_OPERATOR, change('young'), daysAgo(89));
    const errors: unknown[] = [];
    const stop = startUsagePruning(db, fixedClock(NOW.toISOString()), () => 90, (e) => errors.push(e));
    stop();
    let left: string[] = [];
    for (let i = 0; i < 100; i++) {
      left = (await listAudit(db, walletId, { limit: 10, offset: 0 })).data.map((e) => e.target_id ?? '');
      if (left.length === 1) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(errors).toEqual([]);
    expect(left).toEqual(['young']);
  });
});
