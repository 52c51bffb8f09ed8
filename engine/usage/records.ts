// Per-call usage records: what one settled call did and cost, written by the settle's own transaction
// (engine/calls/call-charge.ts hands `usageRecordRows` to the ledger as the settle's charge rows), read by
// GET /v1/generations/{id} and the owner's dashboard, pruned after `limits.usage_record_days`.

import { type AppliedPrices, chargeAt } from '../catalog/usage-cost.ts';
import type { Usage } from '../core/types.ts';
import { type ChargedItem, type ChargeRow, type ChargeRowWriter, chargeRow, type Statement } from '../db/charge-rows.ts';
import type { Db } from '../db/db.ts';
import { dailyRollupWriter } from './daily-rollup.ts';
import type { UsageRecordDraft } from './draft.ts';
import { vendorResponseWriter } from './vendor-responses.ts';

export type { UsageRecordDraft };

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
  trace_id: string | null;
  /** Null for records written before prices were kept. */
  prices: AppliedPrices | null;
}

const COLUMNS = `request_id, wallet_id, key_id, at, door, model, vendor, route, fallback_depth, input_tokens,
  cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, server_tool_calls, characters, images,
  video_seconds, charged_nano, duration_ms, trace_id, prices, transfer_id`;
const LIST_COLUMNS = COLUMNS.replace(', prices, transfer_id', '');

/**
 * Inserts the records of many settles on their transaction, one statement for all. The usage figures are the
 * vendor's word (a usage reader takes any finite number): each is clamped to what its column holds, since a value
 * the database refused would undo the charge written in the same transaction and leave the call unpaid.
 */
function usageRecordsStatement(rows: readonly ChargedItem<UsageRecordDraft>[]): Statement | null {
  if (rows.length === 0) return null;
  const col = <V>(f: (d: UsageRecordDraft, u: Usage, charged: bigint) => V): V[] => rows.map((r) => f(r.item, r.item.usage, r.chargedNano));
  return {
    // The prices travel as JSON text and become jsonb here: a jsonb[] parameter would need each driver's array quoting of JSON.
    sql: `INSERT INTO usage_records (${COLUMNS})
     SELECT c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18, c19, c20, c21, c22::jsonb, c23
       FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[],
                   $9::int[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::int[],
                   $16::bigint[], $17::int[], $18::numeric[], $19::bigint[], $20::int[], $21::text[], $22::text[], $23::text[])
            AS r(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18, c19, c20, c21, c22, c23)`,
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
      col((d) => d.traceId),
      col((d) => (d.prices ? JSON.stringify(d.prices) : null)),
      rows.map((r) => r.transferId ?? null),
    ],
  };
}

/** The usage record writer the ledger's batches call with the records of all their settles. */
export const usageRecordWriter: ChargeRowWriter<UsageRecordDraft> = {
  name: 'usage_records',
  statement: usageRecordsStatement,
  // A record is written with its charge: its charge's id recognises the charge when it is written again.
  transfersRecorded: (ids, since) =>
    `SELECT transfer_id FROM usage_records WHERE transfer_id = ANY(${ids}::text[]) AND at >= ${since}::timestamptz`,
};

/**
 * The call's usage record and its share of the daily rollup, written by its settle's transaction with what the
 * settle charged: the rollup never disagrees with the records it sums.
 */
export const usageRecordRows = (draft: UsageRecordDraft): ChargeRow[] => [
  chargeRow(usageRecordWriter, draft),
  chargeRow(dailyRollupWriter, draft),
];

/** The writers of those rows, by which a charge kept on disk is written again (money/charge-spool.ts). */
export const usageRowWriters: readonly ChargeRowWriter<unknown>[] = [
  usageRecordWriter,
  dailyRollupWriter,
  vendorResponseWriter,
] as readonly ChargeRowWriter<unknown>[];

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
  trace_id: string | null;
  prices: AppliedPrices | string | null;
}

const orNull = (v: string | number | null): number | null => (v === null ? null : Number(v));

function usageRecordView(r: Row): UsageRecordView {
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
    trace_id: r.trace_id,
    // pg parses jsonb; PGlite too, but a driver that hands back text is read the same.
    prices: typeof r.prices === 'string' ? (JSON.parse(r.prices) as AppliedPrices) : r.prices,
  };
}

/**
 * The charge the record's prices give for its counts, from the record alone (null for a record written before
 * prices were kept). It equals `charged_nano` unless the ledger charged otherwise than the cost (a settle it
 * capped).
 */
export function recomputedCharge(r: UsageRecordView): bigint | null {
  if (!r.prices) return null;
  const t = r.tokens;
  return chargeAt(r.prices, {
    input_tokens: t.input,
    cache_read_tokens: t.cache_read,
    cache_write_tokens: t.cache_write,
    output_tokens: t.output,
    images: r.images,
    characters: r.characters,
  });
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
  keyId?: string | undefined;
  model?: string | undefined;
  /** Only records from this instant (inclusive) to `until` (exclusive): a month of the CSV. */
  since?: Date | undefined;
  until?: Date | undefined;
  /** At most this many, newest first. */
  limit: number;
}

const EARLIEST = new Date('1970-01-01T00:00:00Z');
const LATEST = new Date('9999-01-01T00:00:00Z');

/**
 * The wallet's recent records, newest first, optionally of one key or model, without their prices (null here):
 * on PostgreSQL a list is read from an index that holds every other column (migration 013), and the one-call
 * reads (findUsageRecord) have the prices.
 */
export async function listUsageRecords(db: Db, walletId: string, f: UsageFilter): Promise<UsageRecordView[]> {
  const r = await db.query<Row>(
    `SELECT ${LIST_COLUMNS}, NULL::jsonb AS prices FROM usage_records
      WHERE wallet_id = $1 AND ($2::text IS NULL OR key_id = $2) AND ($3::text IS NULL OR model = $3)
        AND at >= $5::timestamptz AND at < $6::timestamptz
      ORDER BY at DESC, seq DESC LIMIT $4`,
    // Bounds always present (the widest when none is asked), so the plan prunes partitions the same way for both.
    [walletId, f.keyId ?? null, f.model ?? null, f.limit, (f.since ?? EARLIEST).toISOString(), (f.until ?? LATEST).toISOString()],
  );
  return r.rows.map(usageRecordView);
}
