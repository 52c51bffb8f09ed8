// The daily rollup of the usage records, written by the same settle statement as each record so it always equals
// the records it sums; the dashboard's chart, totals and summary CSV read it instead of millions of records.
import { koreanDate } from '../core/clock.ts';
import type { ChargedItem, ChargeRowWriter, Statement } from '../db/charge-rows.ts';
import type { Db } from '../db/db.ts';
import { type JsonCell, jsonTable } from '../db/json-rows.ts';
import { recordedCount, type UsageRecordDraft } from './draft.ts';

/** A record without a key is rolled up under '' (a key column of the primary key cannot be null). */
const NO_KEY = '';

/**
 * A usage view's key condition on parameters `$k` (one key) and `$g` (the keys of one class, closed ones too, as
 * the class's own use counts them); either may be null.
 */
export const keysWhere = (k: number, g: number) =>
  `($${k}::text IS NULL OR key_id = $${k}) AND ($${g}::text IS NULL OR key_id IN (SELECT id FROM api_keys WHERE group_id = $${g}))`;

/**
 * Adds a batch's records to their days. The batch's rows are summed first (an upsert may touch a row once),
 * in key order so concurrent batches take row locks in the same order. Token sums are numeric: the vendor's
 * counts are clamped per record, but their sum over a day must never overflow and undo the charge.
 */
function dailyRollupStatement(rows: readonly ChargedItem<UsageRecordDraft>[]): Statement | null {
  if (rows.length === 0) return null;
  const values = rows.map(({ item: d, chargedNano }): JsonCell[] => [
    koreanDate(d.at),
    d.walletId,
    d.keyId ?? NO_KEY,
    d.model,
    chargedNano,
    recordedCount(d.usage.input_tokens),
    recordedCount(d.usage.cache_read_tokens),
    recordedCount(d.usage.cache_write_tokens),
    recordedCount(d.usage.output_tokens),
  ]);
  return {
    sql: `INSERT INTO usage_daily AS d (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens)
     SELECT day, wallet_id, key_id, model, count(*), sum(charged)::bigint, sum(i), sum(cr), sum(cw), sum(o)
       FROM ${ROLLUP.from('$1', 'r')}
      GROUP BY day, wallet_id, key_id, model
      ORDER BY day, wallet_id, key_id, model
     ON CONFLICT (day, wallet_id, key_id, model) DO UPDATE SET
        calls = d.calls + EXCLUDED.calls,
        charged_nano = d.charged_nano + EXCLUDED.charged_nano,
        input_tokens = d.input_tokens + EXCLUDED.input_tokens,
        cache_read_tokens = d.cache_read_tokens + EXCLUDED.cache_read_tokens,
        cache_write_tokens = d.cache_write_tokens + EXCLUDED.cache_write_tokens,
        output_tokens = d.output_tokens + EXCLUDED.output_tokens`,
    params: [ROLLUP.json(values)],
  };
}

/** A record's share of its day, as the JSON rows are read. */
const ROLLUP = jsonTable('day date, wallet_id text, key_id text, model text, charged bigint, i numeric, cr numeric, cw numeric, o numeric');

/**
 * Named after the table: writers are composed in name order, after `usage_records` (every process alike). The keys'
 * day and month figures are sums of its rows (engine/keys/key-use.ts): a charge keeps this row when its others are
 * refused for good (`countsKeyUse`).
 */
export const dailyRollupWriter: ChargeRowWriter<UsageRecordDraft> = {
  name: 'usage_records_daily',
  statement: dailyRollupStatement,
  countsKeyUse: true,
};

interface DayTotal {
  day: string;
  /** The key id ('' for calls without a key) or the model. */
  name: string;
  nano: bigint;
}

/**
 * Nano-USD charged per Korean day and per key or model, from the Korean day `sinceDay` on, for the chart;
 * narrowed like listUsageRecords, so a chart beside a filtered table shows the same calls.
 */
export async function chargedPerDay(
  db: Db,
  walletId: string,
  sinceDay: string,
  by: 'key_id' | 'model',
  only: { keyId?: string | undefined; groupId?: string | undefined; model?: string | undefined } = {},
): Promise<DayTotal[]> {
  const r = await db.query<{ day: string; name: string; nano: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, ${by} AS name, sum(charged_nano)::text AS nano
       FROM usage_daily WHERE wallet_id = $1 AND day >= $2::date
        AND ${keysWhere(3, 5)} AND ($4::text IS NULL OR model = $4)
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [walletId, sinceDay, only.keyId ?? null, only.model ?? null, only.groupId ?? null],
  );
  return r.rows.map((row) => ({ day: row.day, name: row.name, nano: BigInt(row.nano) }));
}

export interface UsageTotals {
  calls: number;
  chargedNano: bigint;
  inputTokens: bigint;
  cacheReadTokens: bigint;
  cacheWriteTokens: bigint;
  outputTokens: bigint;
}

interface RollupFilter {
  /** Korean days, both inclusive. */
  fromDay: string;
  toDay: string;
  keyId?: string | undefined;
  /** The keys of one class. */
  groupId?: string | undefined;
  model?: string | undefined;
}

/** The wallet's totals over Korean days, optionally of one key or model. */
export async function usageTotals(db: Db, walletId: string, f: RollupFilter): Promise<UsageTotals> {
  const r = await db.query<{ calls: string; nano: string; i: string; cr: string; cw: string; o: string }>(
    `SELECT coalesce(sum(calls), 0)::text AS calls, coalesce(sum(charged_nano), 0)::text AS nano,
            coalesce(sum(input_tokens), 0)::text AS i, coalesce(sum(cache_read_tokens), 0)::text AS cr,
            coalesce(sum(cache_write_tokens), 0)::text AS cw, coalesce(sum(output_tokens), 0)::text AS o
       FROM usage_daily
      WHERE wallet_id = $1 AND day BETWEEN $2::date AND $3::date
        AND ${keysWhere(4, 6)} AND ($5::text IS NULL OR model = $5)`,
    [walletId, f.fromDay, f.toDay, f.keyId ?? null, f.model ?? null, f.groupId ?? null],
  );
  const t = r.rows[0]!; // sums without GROUP BY: one row
  return {
    calls: Number(t.calls),
    chargedNano: BigInt(t.nano),
    inputTokens: BigInt(t.i),
    cacheReadTokens: BigInt(t.cr),
    cacheWriteTokens: BigInt(t.cw),
    outputTokens: BigInt(t.o),
  };
}

export interface RollupRow {
  day: string;
  keyId: string | null;
  model: string;
  calls: number;
  chargedNano: bigint;
  inputTokens: string;
  cacheReadTokens: string;
  cacheWriteTokens: string;
  outputTokens: string;
}

/** The rollup's rows over Korean days, oldest first, for the summary CSV. */
export async function rollupRows(db: Db, walletId: string, f: RollupFilter): Promise<RollupRow[]> {
  const r = await db.query<{
    day: string;
    key_id: string;
    model: string;
    calls: string;
    nano: string;
    i: string;
    cr: string;
    cw: string;
    o: string;
  }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, key_id, model, calls::text AS calls, charged_nano::text AS nano,
            input_tokens::text AS i, cache_read_tokens::text AS cr, cache_write_tokens::text AS cw, output_tokens::text AS o
       FROM usage_daily
      WHERE wallet_id = $1 AND day BETWEEN $2::date AND $3::date
        AND ${keysWhere(4, 6)} AND ($5::text IS NULL OR model = $5)
      ORDER BY day, key_id, model`,
    [walletId, f.fromDay, f.toDay, f.keyId ?? null, f.model ?? null, f.groupId ?? null],
  );
  return r.rows.map((x) => ({
    day: x.day,
    keyId: x.key_id === NO_KEY ? null : x.key_id,
    model: x.model,
    calls: Number(x.calls),
    chargedNano: BigInt(x.nano),
    inputTokens: x.i,
    cacheReadTokens: x.cr,
    cacheWriteTokens: x.cw,
    outputTokens: x.o,
  }));
}

/** Removes the rollup's days before the Korean day `beforeDay` (a small table: a plain delete). */
export async function pruneDailyRollup(db: Db, beforeDay: string): Promise<void> {
  await db.query(`DELETE FROM usage_daily WHERE day < $1::date`, [beforeDay]);
}
