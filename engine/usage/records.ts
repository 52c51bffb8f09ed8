// Per-call usage records: what one settled call did and cost, written by the settle's own transaction
// (engine/calls/settlement.ts hands `usageRecordBeside` to the ledger beside the settle), read by
// GET /v1/generations/{id} and the owner's dashboard, pruned after `limits.usage_record_days`.
import type { Db } from '../db/db.ts';
import type { Usage } from '../core/types.ts';
import { besideSettle, type BesideSettle, type RowWriter, type SettleRow, type Statement } from '../db/beside-settle.ts';

/** What the call knows of itself when it settles; the charge is added by the settle's transaction. */
export interface UsageRecordDraft {
  requestId: string;
  walletId: string;
  keyId: string | null;
  at: Date;
  door: string;
  model: string;
  vendor: string;
  route: string | null;
  fallbackDepth: number;
  usage: Usage;
  durationMs: number;
}

/** A record as the API and the dashboard show it: counts as numbers, the charge in nano-USD as a string. */
export interface UsageRecordView {
  id: string;
  object: 'generation';
  created_at: string;
  key_id: string | null;
  door: string;
  model: string;
  vendor: string;
  route: string | null;
  fallback_depth: number;
  tokens: { input: number; cache_read: number; cache_write: number; output: number; reasoning: number | null };
  server_tool_calls: number;
  characters: number | null;
  images: number | null;
  video_seconds: number | null;
  charged_nano: string;
  duration_ms: number;
}

const COLUMNS = `request_id, wallet_id, key_id, at, door, model, vendor, route, fallback_depth, input_tokens,
  cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, server_tool_calls, characters, images,
  video_seconds, charged_nano, duration_ms`;

/**
 * Inserts the records of many settles on their transaction, one statement for all. The usage figures are the
 * vendor's word (a usage reader takes any finite number): each is clamped to what its column holds, since a value
 * the database refused would undo the charge written in the same transaction and leave the call unpaid.
 */
function usageRecordsStatement(rows: readonly SettleRow<UsageRecordDraft>[]): Statement | null {
  if (rows.length === 0) return null;
  const col = <V>(f: (d: UsageRecordDraft, u: Usage, charged: bigint) => V): V[] => rows.map((r) => f(r.item, r.item.usage, r.chargedNano));
  return {
    sql: `INSERT INTO usage_records (${COLUMNS})
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[],
                          $9::int[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::int[],
                          $16::bigint[], $17::int[], $18::numeric[], $19::bigint[], $20::int[])`,
    params: [
      col((d) => d.requestId),
      col((d) => d.walletId),
      col((d) => d.keyId),
      col((d) => d.at.toISOString()),
      col((d) => d.door),
      col((d) => d.model),
      col((d) => d.vendor),
      col((d) => d.route),
      col((d) => d.fallbackDepth),
      col((_, u) => whole(u.input_tokens)),
      col((_, u) => whole(u.cache_read_tokens)),
      col((_, u) => whole(u.cache_write_tokens)),
      col((_, u) => whole(u.output_tokens)),
      col((_, u) => (u.reasoning_tokens === undefined ? null : whole(u.reasoning_tokens))),
      col((_, u) => whole(u.web_search_calls + u.file_search_calls, INT_MAX)),
      col((_, u) => (u.characters === undefined ? null : whole(u.characters))),
      col((_, u) => (u.images === undefined ? null : whole(u.images, INT_MAX))),
      col((_, u) => (u.video_seconds === undefined ? null : String(u.video_seconds))),
      col((_, __, charged) => charged.toString()),
      col((d) => whole(Math.round(d.durationMs), INT_MAX)),
    ],
  };
}

/** The usage record writer the ledger's batches call with the records of all their settles. */
export const usageRecordWriter: RowWriter<UsageRecordDraft> = { name: 'usage_records', statement: usageRecordsStatement };

/** The call's usage record, written by its settle's transaction with what the settle charged. */
export const usageRecordBeside = (draft: UsageRecordDraft): BesideSettle => besideSettle(usageRecordWriter, draft);

/** The `int` columns' largest value. */
const INT_MAX = 2_147_483_647;
/** A count as its column holds it: a whole number from 0 to `max` (bigint columns: the largest exact JavaScript integer). */
const whole = (n: number, max = Number.MAX_SAFE_INTEGER): number => (Number.isFinite(n) && n > 0 ? Math.min(Math.floor(n), max) : 0);

interface Row {
  request_id: string;
  key_id: string | null;
  at: Date | string;
  door: string;
  model: string;
  vendor: string;
  route: string | null;
  fallback_depth: number;
  input_tokens: string;
  cache_read_tokens: string;
  cache_write_tokens: string;
  output_tokens: string;
  reasoning_tokens: string | null;
  server_tool_calls: number;
  characters: string | null;
  images: number | null;
  video_seconds: string | null;
  charged_nano: string;
  duration_ms: number;
}

const orNull = (v: string | number | null): number | null => (v === null ? null : Number(v));

export function usageRecordView(r: Row): UsageRecordView {
  return {
    id: r.request_id,
    object: 'generation',
    created_at: new Date(r.at).toISOString(),
    key_id: r.key_id,
    door: r.door,
    model: r.model,
    vendor: r.vendor,
    route: r.route,
    fallback_depth: r.fallback_depth,
    tokens: {
      input: Number(r.input_tokens),
      cache_read: Number(r.cache_read_tokens),
      cache_write: Number(r.cache_write_tokens),
      output: Number(r.output_tokens),
      reasoning: orNull(r.reasoning_tokens),
    },
    server_tool_calls: r.server_tool_calls,
    characters: orNull(r.characters),
    images: orNull(r.images),
    video_seconds: orNull(r.video_seconds),
    charged_nano: r.charged_nano,
    duration_ms: r.duration_ms,
  };
}

/** The newest record with this request id in the wallet, or null (another wallet's ids are not found). */
export async function findUsageRecord(db: Db, walletId: string, requestId: string): Promise<UsageRecordView | null> {
  const r = await db.query<Row>(`SELECT ${COLUMNS} FROM usage_records WHERE wallet_id = $1 AND request_id = $2 ORDER BY seq DESC LIMIT 1`, [
    walletId,
    requestId,
  ]);
  return r.rows[0] ? usageRecordView(r.rows[0]) : null;
}

export interface UsageFilter {
  keyId?: string;
  model?: string;
  /** At most this many, newest first. */
  limit: number;
}

/** The wallet's recent records, newest first, optionally of one key or model. */
export async function listUsageRecords(db: Db, walletId: string, f: UsageFilter): Promise<UsageRecordView[]> {
  const r = await db.query<Row>(
    `SELECT ${COLUMNS} FROM usage_records
      WHERE wallet_id = $1 AND ($2::text IS NULL OR key_id = $2) AND ($3::text IS NULL OR model = $3)
      ORDER BY at DESC, seq DESC LIMIT $4`,
    [walletId, f.keyId ?? null, f.model ?? null, f.limit],
  );
  return r.rows.map(usageRecordView);
}

/** Credits charged per Korean day and per key or model since `since`, for the dashboard's chart. */
export async function chargedPerDay(
  db: Db,
  walletId: string,
  since: Date,
  by: 'key_id' | 'model',
  only: { keyId?: string; model?: string } = {},
): Promise<{ day: string; name: string; nano: bigint }[]> {
  // Narrowed like listUsageRecords, so a chart beside a filtered table shows the same calls.
  const r = await db.query<{ day: string; name: string | null; nano: string }>(
    `SELECT to_char(at AT TIME ZONE 'Asia/Seoul', 'YYYY-MM-DD') AS day, ${by} AS name, sum(charged_nano)::text AS nano
       FROM usage_records WHERE wallet_id = $1 AND at >= $2::timestamptz
        AND ($3::text IS NULL OR key_id = $3) AND ($4::text IS NULL OR model = $4)
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [walletId, since.toISOString(), only.keyId ?? null, only.model ?? null],
  );
  return r.rows.map((row) => ({ day: row.day, name: row.name ?? '', nano: BigInt(row.nano) }));
}

/** Removes records older than `before`; returns how many. */
export async function pruneUsageRecords(db: Db, before: Date): Promise<number> {
  const r = await db.query(`DELETE FROM usage_records WHERE at < $1::timestamptz`, [before.toISOString()]);
  return r.rowCount;
}
