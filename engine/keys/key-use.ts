// A key's use, read from the daily rollup (engine/usage/daily-rollup.ts): its day figure is the sum of its
// `usage_daily` rows on the Korean day, its month figure the sum over the Korean month's days. The rollup is
// written by the statement that charges each call, so the figures count exactly what was charged, with no
// counter of the key's own to write per charge (index `usage_daily_key_day`, migration 024).

import { koreanDate, koreanMonthDays } from '../core/clock.ts';
import { toBigInt } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';
import { jsonTable } from '../db/json-rows.ts';
import type { KeyUsage } from './use-cache.ts';

/** Korean days, `from` inclusive and `to` exclusive (YYYY-MM-DD): a month, as koreanMonthDays gives it. */
export interface KeyDays {
  from: string;
  to: string;
}

/** Used amounts of keys on the Korean day and month of `now`. Keys without use map to zeros. */
export async function keyUsage(q: Queryable, keyIds: readonly string[], now: Date): Promise<Map<string, KeyUsage>> {
  const out = new Map<string, KeyUsage>(keyIds.map((id) => [id, { dayNano: 0n, monthNano: 0n }]));
  if (keyIds.length === 0) return out;
  const month = koreanMonthDays(now);
  const res = await q.query<{ key_id: string; day: string; month: string }>(
    `SELECT key_id, coalesce(sum(charged_nano) FILTER (WHERE day = $2::date), 0)::text AS day, sum(charged_nano)::text AS month
       FROM usage_daily
      WHERE key_id = ANY($1::text[]) AND day >= $3::date AND day < $4::date
      GROUP BY key_id`,
    [[...keyIds], koreanDate(now), month.from, month.to],
  );
  for (const r of res.rows) {
    const u = out.get(r.key_id);
    if (u) {
      u.dayNano = toBigInt(r.day);
      u.monthNano = toBigInt(r.month);
    }
  }
  return out;
}

/**
 * Locks the keys (their `api_keys` rows) in id order, for a capped reserve: capped reserves of one key are then
 * decided one after another in any process. FOR NO KEY UPDATE: it waits for no foreign key check, and a key's
 * own updates (its limits, its last use: keys/last-used.ts locks in id order too) wait for it and it for them.
 * Nothing a charge writes is locked: what it moves is read in one snapshot by readKeyStandings.
 */
export async function lockKeys(tx: Queryable, keyIds: readonly string[]): Promise<void> {
  if (keyIds.length === 0) return;
  await tx.query('SELECT id FROM api_keys WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE', [[...keyIds].sort()]);
}

const KEY_DAYS = jsonTable('key_id text, from_day date, to_day date');

// Each key's finished use over its days and what its held reservations hold, in one statement: one snapshot, so a
// charge committing meanwhile (its reservation settled or drawn and its rollup row written by one transaction) is
// counted as held or as used, never as neither nor both. Held: the key's own reservations (its calls' own holds and
// the leases of its allowance, less what their records owe, which the rollup counts as used), and what its calls
// hold on the wallet's leases, told per key (money/in-flight.ts): calls admitted before the key had a limit count too.
const STANDINGS_SQL = `
SELECT c.key_id,
       (SELECT coalesce(sum(d.charged_nano), 0) FROM usage_daily d
         WHERE d.key_id = c.key_id AND d.day >= c.from_day AND d.day < c.to_day)::text AS used,
       ((SELECT coalesce(sum(r.amount_nano), 0) FROM reservations r WHERE r.key_id = c.key_id AND r.state = 'held')
        - (SELECT coalesce(sum(u.charged_nano), 0) FROM reservations r JOIN usage_records u ON u.lease_id = r.id
            WHERE r.key_id = c.key_id AND r.state = 'held')
        + (SELECT coalesce(sum((r.in_flight_by_key ->> c.key_id)::bigint), 0) FROM reservations r
            WHERE r.state = 'held' AND r.in_flight_by_key IS NOT NULL AND r.key_id IS DISTINCT FROM c.key_id
              AND r.wallet_id = (SELECT k.wallet_id FROM api_keys k WHERE k.id = c.key_id)))::text AS held
  FROM ${KEY_DAYS.from('$1', 'c')}`;

/** A key's month as a capped reserve reads it: finished use and holds. */
interface KeyStandingRead {
  usedNano: bigint;
  heldNano: bigint;
}

/**
 * The standing of each key over its days (its cap's month), read in one statement; after lockKeys, it sees every
 * hold committed by a capped reserve of these keys before this one.
 */
export async function readKeyStandings(
  q: Queryable,
  keys: readonly { keyId: string; days: KeyDays }[],
): Promise<Map<string, KeyStandingRead>> {
  const out = new Map<string, KeyStandingRead>();
  if (keys.length === 0) return out;
  const rows = (
    await q.query<{ key_id: string; used: string; held: string }>(STANDINGS_SQL, [
      KEY_DAYS.json(keys.map((k) => [k.keyId, k.days.from, k.days.to])),
    ])
  ).rows;
  for (const r of rows) out.set(r.key_id, { usedNano: toBigInt(r.used), heldNano: toBigInt(r.held) });
  return out;
}

/**
 * Counts `nano` on the key's Korean day of `at` as a rollup row of model '' with one call, outside a charge (a
 * charge's use is its usage record's rollup row). Pass `tx` to join a transaction.
 */
export async function countKeyUse(q: Queryable, keyId: string, nano: bigint, at: Date): Promise<void> {
  if (nano <= 0n) return;
  await q.query(
    `INSERT INTO usage_daily AS d (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens)
     SELECT $2::date, k.wallet_id, k.id, '', 1, $3::bigint, 0, 0, 0, 0 FROM api_keys k WHERE k.id = $1
     ON CONFLICT (wallet_id, day, key_id, model) DO UPDATE SET calls = d.calls + 1, charged_nano = d.charged_nano + EXCLUDED.charged_nano`,
    [keyId, koreanDate(at), nano.toString()],
  );
}
