// The records of the per-call CSV, read lean: the time went to this process parsing typed cells, not to the
// database, so the database hands back text cells already formatted. The owner's strings stay separate cells so
// the one CSV cell function escapes every one of them (docs/decisions/usage-records.md).
import type { Db } from '../db/db.ts';
import { keysWhere } from './daily-rollup.ts';
import { filterParams, type UsageFilter } from './records.ts';

export interface UsageCsvRow {
  request_id: string;
  key_id: string | null;
  /** The record's instant as Date.prototype.toISOString writes it. */
  created_at: string;
  door: string;
  model: string;
  vendor: string;
  route: string | null;
  /** fallback_depth … video_seconds, charged_nano, charged_credits, duration_ms: CSV cells joined by commas. */
  counts: string;
  trace_id: string | null;
}

/** A nullable number as its cell (empty for null), the way the CSV showed a record's numbers before. */
const n = (col: string) => `coalesce(${col}::text, '')`;

/**
 * Credits with three decimals, no grouping (exactCredits without its commas). A negative amount gets the
 * leading apostrophe the cell function gives any string that starts with '-' (a charge is never negative).
 */
const CREDITS = `CASE WHEN charged_nano < 0 THEN '''-' ELSE '' END || (abs(charged_nano) / 1000)::text || '.' || lpad((abs(charged_nano) % 1000)::text, 3, '0')`;
const CHARGED = `CASE WHEN charged_nano < 0 THEN '''' ELSE '' END || charged_nano::text`;

const COUNTS = [
  'fallback_depth::text',
  'input_tokens::text',
  'cache_read_tokens::text',
  'cache_write_tokens::text',
  'output_tokens::text',
  n('reasoning_tokens'),
  'server_tool_calls::text',
  n('characters'),
  n('images'),
  n('video_seconds'),
  CHARGED,
  CREDITS,
  'duration_ms::text',
].join(` || ',' || `);

/** The wallet's records for the CSV, newest first; the same rows, filter and order as listUsageRecords. */
export async function listUsageCsvRows(db: Db, walletId: string, f: UsageFilter): Promise<UsageCsvRow[]> {
  const r = await db.query<UsageCsvRow>(
    `SELECT request_id, key_id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, door, model, vendor, route,
            ${COUNTS} AS counts, trace_id
       FROM usage_records
      WHERE wallet_id = $1 AND ${keysWhere(2, 7)} AND ($3::text IS NULL OR model = $3)
        AND at >= $5::timestamptz AND at < $6::timestamptz
      ORDER BY at DESC, seq DESC LIMIT $4`,
    filterParams(walletId, f),
  );
  return r.rows;
}
