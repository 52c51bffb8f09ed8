// The figures of the key groups (classes) of some charged keys, for their threshold alerts: each group's limits
// and the sum of its keys' use on the Korean day and month (their `usage_daily` rows, which their quotas sum;
// engine/keys/group-quota.ts).

import { koreanDate, koreanMonthDays } from '../core/clock.ts';
import { toBigInt } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';
import type { GroupFigures } from './thresholds.ts';

export async function groupFigures(q: Queryable, walletId: string, keyIds: string[], now: Date): Promise<GroupFigures[]> {
  const r = await q.query<Record<string, string | null>>(
    `SELECT g.id, g.name, g.monthly_limit_credits::text AS monthly, g.daily_limit_credits::text AS daily,
            (SELECT coalesce(sum(d.charged_nano), 0) FROM api_keys m JOIN usage_daily d ON d.key_id = m.id
              WHERE m.group_id = g.id AND d.day >= $3::date AND d.day < $5::date)::text AS month_used,
            (SELECT coalesce(sum(d.charged_nano), 0) FROM api_keys m JOIN usage_daily d ON d.key_id = m.id
              WHERE m.group_id = g.id AND d.day = $4::date)::text AS day_used
       FROM key_groups g
      WHERE g.wallet_id = $1 AND g.deleted_at IS NULL
        AND g.id IN (SELECT k.group_id FROM api_keys k WHERE k.id = ANY($2::text[]) AND k.group_id IS NOT NULL)
        AND (g.monthly_limit_credits IS NOT NULL OR g.daily_limit_credits IS NOT NULL)`,
    [walletId, keyIds, koreanMonthDays(now).from, koreanDate(now), koreanMonthDays(now).to],
  );
  return r.rows.map((row) => ({
    groupId: String(row.id),
    name: String(row.name),
    monthlyLimitCredits: row.monthly == null ? null : Number(row.monthly),
    dailyLimitCredits: row.daily == null ? null : Number(row.daily),
    monthUsedNano: toBigInt(row.month_used ?? '0'),
    dayUsedNano: toBigInt(row.day_used ?? '0'),
  }));
}
