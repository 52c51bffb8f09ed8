// Per-call usage records: what one settled call did and cost, written by the settle's own transaction
// (engine/calls/call-charge.ts hands `usageRecordRows` to the ledger as the settle's charge rows), read by
// GET /v1/generations/{id} and the owner's dashboard, pruned after `limits.usage_record_days`.

import { type AppliedPrices, chargeAt } from '../catalog/usage-cost.ts';
import { type ChargedItem, type ChargeRow, type ChargeRowWriter, chargeRow, type Statement } from '../db/charge-rows.ts';
import type { Db } from '../db/db.ts';
import { type JsonCell, jsonTable } from '../db/json-rows.ts';
import { dailyRollupWriter, keysWhere } from './daily-rollup.ts';
import { recordedCount, type UsageRecordDraft } from './draft.ts';
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

/** The columns a record is written with, and their types as the JSON rows are read. */
const RECORD_COLUMNS = `request_id text, wallet_id text, key_id text, at timestamptz, door text, model text, vendor text,
  route text, fallback_depth int, input_tokens bigint, cache_read_tokens bigint, cache_write_tokens bigint, output_tokens bigint,
  reasoning_tokens bigint, server_tool_calls int, characters bigint, images int, video_seconds numeric, charged_nano bigint,
  duration_ms int, trace_id text, prices jsonb, transfer_id text, lease_id text`;
const RECORDS = jsonTable(RECORD_COLUMNS);

const COLUMNS = RECORDS.names.join(', ');
const LIST_COLUMNS = COLUMNS.replace(', prices, transfer_id, lease_id', '');

/**
 * Inserts the records of many settles on their transaction, one statement for all. The usage figures are the
 * vendor's word (a usage reader takes any finite number): each is clamped to what its column holds, since a value
 * the database refused would undo the charge written in the same transaction and leave the call unpaid.
 */
function usageRecordsStatement(rows: readonly ChargedItem<UsageRecordDraft>[]): Statement | null {
  if (rows.length === 0) return null;
  return {
    sql: `INSERT INTO usage_records (${COLUMNS}) SELECT ${COLUMNS} FROM ${RECORDS.from('$1', 'r')}`,
    params: [RECORDS.json(rows.map(recordValues))],
  };
}

/** A record's values in RECORD_COLUMNS' order. */
function recordValues({ item: d, chargedNano, transferId, leaseId }: ChargedItem<UsageRecordDraft>): JsonCell[] {
  const u = d.usage;
  return [
    d.requestId,
    d.walletId,
    d.keyId,
    d.at,
    d.door,
    d.model,
    d.vendor,
    d.route,
    d.fallbackDepth,
    recordedCount(u.input_tokens),
    recordedCount(u.cache_read_tokens),
    recordedCount(u.cache_write_tokens),
    recordedCount(u.output_tokens),
    u.reasoning_tokens === undefined ? null : recordedCount(u.reasoning_tokens),
    recordedCount(u.web_search_calls + u.file_search_calls, INT_MAX),
    u.characters === undefined ? null : recordedCount(u.characters),
    u.images === undefined ? null : recordedCount(u.images, INT_MAX),
    u.video_seconds === undefined ? null : String(u.video_seconds),
    chargedNano,
    recordedCount(Math.round(d.durationMs), INT_MAX),
    d.traceId,
    d.prices ?? null,
    transferId ?? null,
    leaseId ?? null,
  ];
}

/** The usage record writer the ledger's batches call with the records of all their settles. */
export const usageRecordWriter: ChargeRowWriter<UsageRecordDraft> = {
  name: 'usage_records',
  statement: usageRecordsStatement,
  // A record is written with its charge: its charge's id recognises the charge when it is written again.
  // A closed range of instants: planned on the (transfer_id, at) index even on an empty table (PGlite never analyzes),
  // and on PostgreSQL it searches the days' tables it covers, not every day made ahead.
  transfersRecorded: {
    look: (ids, since, until) =>
      `SELECT transfer_id FROM usage_records WHERE transfer_id = ANY(${ids}::text[]) AND at >= ${since}::timestamptz AND at < ${until}::timestamptz`,
    at: (d) => d.at,
  },
  owesOnLease: true,
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
  /** The keys of one class. */
  groupId?: string | undefined;
  model?: string | undefined;
  /** Only records from this instant (inclusive) to `until` (exclusive): a month of the CSV. */
  since?: Date | undefined;
  until?: Date | undefined;
  /** At most this many, newest first. */
  limit: number;
}

const EARLIEST = new Date('1970-01-01T00:00:00Z');
const LATEST = new Date('9999-01-01T00:00:00Z');

/** The parameters of a records list's filter: $1 wallet, $2 key, $3 model, $4 limit, $5–$6 instants, $7 class. */
export const filterParams = (walletId: string, f: UsageFilter) => [
  walletId,
  f.keyId ?? null,
  f.model ?? null,
  f.limit,
  (f.since ?? EARLIEST).toISOString(),
  (f.until ?? LATEST).toISOString(),
  f.groupId ?? null,
];

/**
 * The wallet's recent records, newest first, optionally of one key or model, without their prices (null here):
 * on PostgreSQL a list is read from an index that holds every other column (migration 013), and the one-call
 * reads (findUsageRecord) have the prices.
 */
export async function listUsageRecords(db: Db, walletId: string, f: UsageFilter): Promise<UsageRecordView[]> {
  const r = await db.query<Row>(
    `SELECT ${LIST_COLUMNS}, NULL::jsonb AS prices FROM usage_records
      WHERE wallet_id = $1 AND ${keysWhere(2, 7)} AND ($3::text IS NULL OR model = $3)
        AND at >= $5::timestamptz AND at < $6::timestamptz
      ORDER BY at DESC, seq DESC LIMIT $4`,
    // Bounds always present (the widest when none is asked), so the plan prunes partitions the same way for both.
    filterParams(walletId, f),
  );
  return r.rows.map(usageRecordView);
}
