// A key that moves to another class takes its month's use along (a class's use is its keys' use: group-quota.ts),
// and its calls in flight are charged to the class it is in when they end. So a key that has spent this month, or
// has calls in progress, stays where it is while a class limit is involved: the move would free room under one
// class's limit and pass the other's.

import { koreanMonthDays } from '../core/clock.ts';
import { errors, type GatewayError } from '../core/errors.ts';
import { LEASE_CALL_PREFIX } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';
import { callsHeldSql } from './group-quota.ts';
import type { KeyRow } from './types.ts';

// The key's use this month and what its calls in progress hold (its allowance lease's rest is no call's).
const MONTH_AND_CALLS_SQL = `
SELECT (SELECT coalesce(sum(d.charged_nano), 0) FROM usage_daily d
         WHERE d.key_id = $1 AND d.day >= $2::date AND d.day < $3::date)::text AS used,
       ${callsHeldSql('k.id = $1', '$4')}::text AS held`;

/** Why a key may not move now: it holds money for calls in progress, or it has spent this month. */
type MoveStop = 'busy' | 'spent';

/**
 * Why the key may not move to `toGroupId` now, or null when it may. `anyClass`: stop it even between classes
 * without limits (a teacher's move). Read under the key's lock, once every process has stopped admitting the key's
 * calls and told what those it admitted hold on leases (moving-keys.ts), so a call admitted in memory is seen.
 */
export async function moveStop(
  tx: Queryable,
  current: Pick<KeyRow, 'id' | 'groupId'>,
  toGroupId: string | null | undefined,
  now: Date,
  anyClass: boolean,
): Promise<MoveStop | null> {
  if (toGroupId === undefined || toGroupId === current.groupId) return null;
  const month = koreanMonthDays(now);
  const r = await tx.query<{ used: string; held: string }>(MONTH_AND_CALLS_SQL, [
    current.id,
    month.from,
    month.to,
    `${LEASE_CALL_PREFIX}%`,
  ]);
  const row = r.rows[0]!; // scalar subqueries: always one row
  const stop: MoveStop | null = BigInt(row.held) > 0n ? 'busy' : BigInt(row.used) > 0n ? 'spent' : null;
  if (stop === null || anyClass) return stop;
  return (await anyLimited(tx, [current.groupId, toGroupId])) ? stop : null;
}

/** Whether one of the classes has a monthly or a daily limit. */
async function anyLimited(tx: Queryable, groupIds: readonly (string | null)[]): Promise<boolean> {
  const ids = groupIds.filter((id): id is string => id !== null);
  if (ids.length === 0) return false;
  const r = await tx.query(
    `SELECT 1 FROM key_groups WHERE id = ANY($1::text[]) AND (monthly_limit_credits IS NOT NULL OR daily_limit_credits IS NOT NULL) LIMIT 1`,
    [ids],
  );
  return r.rows.length > 0;
}

/** The refusal of a move, naming `group_id`: what stops it and what the owner can do instead. */
export function moveRefused(stop: MoveStop): GatewayError {
  return errors.invalidRequest(
    stop === 'busy'
      ? 'group_id: this key has calls in progress, held under its class limit; moved now, they would be charged to the other class. Move it once they end.'
      : "group_id: this key has spent this month, and its use would move with it, freeing room under its class's limit and counting against the other's. " +
          'Move it next month, or close it and make a new key in the other class (a closed key’s use stays with its class).',
    'group_id',
  );
}
