// A key group's use and its monthly cap, as the ledger checks it beside the key's own. A group's use is the sum of
// its keys' use (their `usage_daily` rows, key-use.ts; no counter of its own to drift), read with its holds in one
// statement after its row is locked, so a settle committing meanwhile counts as held or as used, never as neither.

import { koreanDate, koreanMonthDays, nextKoreanMidnight, nextKoreanMonthStart } from '../core/clock.ts';
import { errors, type GatewayError } from '../core/errors.ts';
import { LEASE_CALL_PREFIX, NANO_PER_CREDIT, nanoToCreditsFloor, toBigInt } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';
import type { KeyDays } from './key-use.ts';
import { askLessHint, type KeyGroupContext, usedCredits } from './types.ts';
import type { KeyUsage } from './use-cache.ts';

/** A group's standing as its lock read it: the limit now (null: none), finished use of the month, holds in flight. */
interface GroupStandingRead {
  limitNano: bigint | null;
  usedNano: bigint;
  heldNano: bigint;
  /** The group's keys now: a finish of one of their reservations in the same batch moves the group's figures. */
  keyIds: string[];
}

/** The group cap a capped reserve carries (engine/money/group-caps.ts locks and links it). */
export interface GroupCap {
  groupId: string;
  lock(tx: Queryable): Promise<GroupStandingRead>;
}

/** What the groups' keys used on the Korean day and month of `now`; groups without use map to zeros. */
export async function groupUsage(q: Queryable, groupIds: string[], now: Date): Promise<Map<string, KeyUsage>> {
  const out = new Map<string, KeyUsage>(groupIds.map((id) => [id, { dayNano: 0n, monthNano: 0n }]));
  if (groupIds.length === 0) return out;
  const month = koreanMonthDays(now);
  const res = await q.query<{ group_id: string; day: string; month: string }>(
    `SELECT k.group_id, coalesce(sum(d.charged_nano) FILTER (WHERE d.day = $2::date), 0)::text AS day,
            sum(d.charged_nano)::text AS month
       FROM api_keys k JOIN usage_daily d ON d.key_id = k.id
      WHERE k.group_id = ANY($1::text[]) AND d.day >= $3::date AND d.day < $4::date
      GROUP BY k.group_id`,
    [groupIds, koreanDate(now), month.from, month.to],
  );
  for (const r of res.rows) {
    const u = out.get(r.group_id);
    if (!u) continue;
    u.dayNano = toBigInt(r.day);
    u.monthNano = toBigInt(r.month);
  }
  return out;
}

/**
 * What calls in progress hold for the keys `keysOf` selects (a condition on `api_keys k`): their own holds at their
 * amount, and what their calls hold on leases (told per key), the wallet's or a key's allowance, whose unspent rest
 * is no call's. `leasePrefix` is the parameter holding the lease call ids' LIKE pattern.
 */
export const callsHeldSql = (keysOf: string, leasePrefix: string) => `
       ((SELECT coalesce(sum(r.amount_nano), 0) FROM api_keys k JOIN reservations r ON r.key_id = k.id
          WHERE ${keysOf} AND r.state = 'held' AND r.call_id NOT LIKE ${leasePrefix})
        + (SELECT coalesce(sum(f.nano::bigint), 0)
             FROM reservations r CROSS JOIN LATERAL jsonb_each_text(r.in_flight_by_key) AS f(key_id, nano)
             JOIN api_keys k ON k.id = f.key_id
            WHERE r.state = 'held' AND r.in_flight_by_key IS NOT NULL AND ${keysOf} AND r.wallet_id = k.wallet_id))`;

// Use and holds in one statement (one snapshot). Calls a key made before it joined the class count as soon as it
// is a member (a key with use or calls in progress joins a class with a limit only in a month it has not spent:
// key-moves.ts).
const STANDING_SQL = `
SELECT (SELECT coalesce(sum(d.charged_nano), 0)::text FROM api_keys k JOIN usage_daily d ON d.key_id = k.id
         WHERE k.group_id = $1 AND d.day >= $2::date AND d.day < $3::date) AS used,
       ${callsHeldSql('k.group_id = $1', '$4')}::text AS held,
       (SELECT coalesce(array_agg(k.id ORDER BY k.id), '{}') FROM api_keys k WHERE k.group_id = $1) AS key_ids`;

/**
 * A group's limit now, its month's use and its keys' holds; `lock`: under a lock on the group's row, as the
 * reserve reads it (a read without it is what a call could hold, for fitting its output: front-half.ts).
 */
async function readStanding(q: Queryable, groupId: string, month: KeyDays, lock: boolean): Promise<GroupStandingRead> {
  const g = await q.query<{ monthly: string | null }>(
    `SELECT monthly_limit_credits::text AS monthly FROM key_groups WHERE id = $1 AND deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
    [groupId],
  );
  const monthly = g.rows[0]?.monthly ?? null;
  const r = await q.query<{ used: string; held: string; key_ids: string[] | string }>(STANDING_SQL, [
    groupId,
    month.from,
    month.to,
    `${LEASE_CALL_PREFIX}%`,
  ]);
  const row = r.rows[0]!; // scalar subqueries: always one row
  return {
    limitNano: monthly == null ? null : BigInt(monthly) * NANO_PER_CREDIT,
    usedNano: toBigInt(row.used),
    heldNano: toBigInt(row.held),
    keyIds: pgTextArray(row.key_ids),
  };
}

/** The cap of a group for a reserve made at `now` (the Korean month of `now`). */
export function groupCap(groupId: string, now: Date): GroupCap {
  const month = koreanMonthDays(now);
  return { groupId, lock: (tx) => readStanding(tx, groupId, month, true) };
}

/** What the group's monthly limit leaves of the Korean month of `now` (0 once used up), or null when it has none. */
export async function groupMonthLeftNano(q: Queryable, groupId: string, now: Date): Promise<bigint | null> {
  const g = await readStanding(q, groupId, koreanMonthDays(now), false);
  if (g.limitNano === null) return null;
  const left = g.limitNano - g.usedNano - g.heldNano;
  return left > 0n ? left : 0n;
}

/** A text[] as the driver hands it: an array (pg) or its literal `{a,b}` (some PGlite paths). */
function pgTextArray(v: string[] | string): string[] {
  if (Array.isArray(v)) return v;
  const inner = v.replace(/^\{|\}$/g, '');
  return inner === '' ? [] : inner.split(',').map((s) => s.replace(/^"|"$/g, ''));
}

/** What the group's daily limit leaves of the Korean day of `now` (0 once used up). */
export async function groupDayLeftNano(q: Queryable, group: KeyGroupContext, now: Date, heldNano: bigint): Promise<bigint> {
  const left = (group.dailyLimitNano ?? 0n) - (await groupUsage(q, [group.id], now)).get(group.id)!.dayNano - heldNano;
  return left > 0n ? left : 0n;
}

/**
 * The group's daily limit blocks once its keys' use today has reached it, as a key's own daily limit does
 * (the spec's approximate accounting): read each call, so another process's answer is seen.
 */
export async function checkGroupDay(q: Queryable, group: KeyGroupContext, now: Date, heldNano: bigint): Promise<void> {
  if (group.dailyLimitNano == null) return;
  const used = (await groupUsage(q, [group.id], now)).get(group.id)!.dayNano;
  if (used + heldNano < group.dailyLimitNano) return;
  const held = heldNano > 0n ? `, ${usedCredits(heldNano)} held by calls in progress` : '';
  throw errors.keyLimit(
    `This key's group '${group.name}' reached its daily limit of ${nanoToCreditsFloor(group.dailyLimitNano)} credits ` +
      `(${usedCredits(used)} used today by its keys${held}). It reopens at ${nextKoreanMidnight(now).toISOString()} (00:00 Korean time); ` +
      `raising the group's daily limit lifts it at once.`,
    nextKoreanMidnight(now).getTime() - now.getTime(),
  );
}

/** The 429 of a call whose largest amount does not fit what its group's month leaves. */
export function groupMonthlyLimitError(
  name: string,
  maxCostNano: bigint,
  g: { limitNano: bigint; usedNano: bigint; heldNano: bigint },
  now: Date,
): GatewayError {
  const held = g.heldNano > 0n ? `, ${usedCredits(g.heldNano)} more held by its keys' calls still in progress` : '';
  return errors.keyLimit(
    `This call may pass the monthly limit of this key's group '${name}': ${usedCredits(g.usedNano)} of ` +
      `${nanoToCreditsFloor(g.limitNano)} credits used this month by its keys${held}, and the call may use up to ` +
      `${usedCredits(maxCostNano)} credits. ${askLessHint(g.limitNano, g.usedNano, g.heldNano)}The limit reopens at ` +
      `${nextKoreanMonthStart(now).toISOString()} (00:00 Korean time on the first of next month); raising the group's ` +
      `monthly limit lifts it at once.`,
    g.heldNano > 0n ? 1_000 : nextKoreanMonthStart(now).getTime() - now.getTime(),
  );
}
