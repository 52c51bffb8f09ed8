// Video jobs in the database (engine/db/migrations/003_videos.sql): create, read, list, claim with a lease,
// and lease-checked writes. Works the same on PostgreSQL and PGlite.
import { randomBytes } from 'node:crypto';
import { toBigInt } from '../core/money.ts';
import type { JsonObject } from '../core/types.ts';
import type { Db } from '../db/db.ts';

type VideoStatus = 'queued' | 'in_progress' | 'completed' | 'failed';
export type VideoErrorCode = 'moderation_blocked' | 'vendor_failed' | 'timed_out' | 'undelivered';

export interface VideoJob {
  id: string;
  seq: bigint;
  walletId: string;
  keyId: string;
  idempotencyKey: string | null;
  model: string;
  vendor: string;
  seconds: string;
  size: string;
  resolution: string;
  status: VideoStatus;
  progress: number;
  errorCode: VideoErrorCode | null;
  errorMessage: string | null;
  usageSeconds: number | null;
  costNano: bigint | null;
  holdRef: string;
  holdNano: bigint;
  vendorRequest: JsonObject | null;
  requestId: string | null;
  routeIndex: number | null;
  deliverAttempts: number;
  fileName: string | null;
  fileBytes: bigint | null;
  fileDeletedAt: Date | null;
  deletedAt: Date | null;
  createdAt: Date;
  completedAt: Date | null;
  expiresAt: Date | null;
  finishedAt: Date | null;
  visibleUntil: Date | null;
  deadlineWall: Date;
  nextPollAt: Date;
  leaseOwner: string | null;
  leaseUntil: Date | null;
}

/** What a new job starts with: the identity, the hold and the vendor request, leased to its creator. */
export type NewVideoJob = Pick<
  VideoJob,
  | 'id'
  | 'walletId'
  | 'keyId'
  | 'idempotencyKey'
  | 'model'
  | 'vendor'
  | 'seconds'
  | 'size'
  | 'resolution'
  | 'holdRef'
  | 'holdNano'
  | 'createdAt'
  | 'deadlineWall'
  | 'nextPollAt'
> & { vendorRequest: JsonObject; leaseOwner: string; leaseUntil: Date };

/** Columns a worker may write (camelCase name → column). */
const COLUMNS = {
  status: 'status',
  progress: 'progress',
  errorCode: 'error_code',
  errorMessage: 'error_message',
  usageSeconds: 'usage_seconds',
  costNano: 'cost_nano',
  vendorRequest: 'vendor_request',
  requestId: 'request_id',
  routeIndex: 'route_index',
  deliverAttempts: 'deliver_attempts',
  fileName: 'file_name',
  fileBytes: 'file_bytes',
  fileDeletedAt: 'file_deleted_at',
  deletedAt: 'deleted_at',
  completedAt: 'completed_at',
  expiresAt: 'expires_at',
  finishedAt: 'finished_at',
  visibleUntil: 'visible_until',
  nextPollAt: 'next_poll_at',
  leaseOwner: 'lease_owner',
  leaseUntil: 'lease_until',
} as const;

export type VideoPatch = Partial<Pick<VideoJob, keyof typeof COLUMNS>>;

const date = (v: unknown): Date | null => (v === null || v === undefined ? null : v instanceof Date ? v : new Date(v as string));
const bigOrNull = (v: unknown): bigint | null => (v === null || v === undefined ? null : toBigInt(v));
const json = (v: unknown): JsonObject | null =>
  v === null || v === undefined ? null : typeof v === 'string' ? JSON.parse(v) : (v as JsonObject);

function fromRow(r: Record<string, unknown>): VideoJob {
  return {
    id: r.id as string,
    seq: toBigInt(r.seq),
    walletId: r.wallet_id as string,
    keyId: r.key_id as string,
    idempotencyKey: (r.idempotency_key as string | null) ?? null,
    model: r.model as string,
    vendor: r.vendor as string,
    seconds: r.seconds as string,
    size: r.size as string,
    resolution: r.resolution as string,
    status: r.status as VideoStatus,
    progress: Number(r.progress),
    errorCode: (r.error_code as VideoErrorCode | null) ?? null,
    errorMessage: (r.error_message as string | null) ?? null,
    usageSeconds: r.usage_seconds === null || r.usage_seconds === undefined ? null : Number(r.usage_seconds),
    costNano: bigOrNull(r.cost_nano),
    holdRef: r.hold_ref as string,
    holdNano: toBigInt(r.hold_nano),
    vendorRequest: json(r.vendor_request),
    requestId: (r.request_id as string | null) ?? null,
    routeIndex: r.route_index === null || r.route_index === undefined ? null : Number(r.route_index),
    deliverAttempts: Number(r.deliver_attempts ?? 0),
    fileName: (r.file_name as string | null) ?? null,
    fileBytes: bigOrNull(r.file_bytes),
    fileDeletedAt: date(r.file_deleted_at),
    deletedAt: date(r.deleted_at),
    createdAt: date(r.created_at)!,
    completedAt: date(r.completed_at),
    expiresAt: date(r.expires_at),
    finishedAt: date(r.finished_at),
    visibleUntil: date(r.visible_until),
    deadlineWall: date(r.deadline_wall)!,
    nextPollAt: date(r.next_poll_at)!,
    leaseOwner: (r.lease_owner as string | null) ?? null,
    leaseUntil: date(r.lease_until),
  };
}

function param(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return v.toString();
  if (v !== null && typeof v === 'object') return JSON.stringify(v);
  return v;
}

interface ListOptions {
  limit: number;
  /** Only jobs after this one in the list's order. */
  afterSeq?: bigint | undefined;
  order: 'asc' | 'desc';
  now: Date;
}

export interface VideoStore {
  /** Inserts the job; with an idempotency key already used by the wallet, returns that job and `created: false`. */
  insert(job: NewVideoJob): Promise<{ job: VideoJob; created: boolean }>;
  byIdempotencyKey(walletId: string, key: string): Promise<VideoJob | null>;
  get(id: string): Promise<VideoJob | null>;
  /** The wallet's visible jobs (not deleted, not past retention) in creation order; one more than `limit` to tell has_more. */
  list(walletId: string, opts: ListOptions): Promise<VideoJob[]>;
  /**
   * Takes up to `limit` unfinished jobs that are due and not leased (or whose lease ran out), skipping rows
   * another process is claiming at this moment, and writes this worker's lease on them.
   */
  claim(owner: string, wallNow: Date, leaseUntil: Date, limit: number): Promise<VideoJob[]>;
  /** Writes the patch only while `owner` still holds the job's lease (null: no lease condition). False when it did not. */
  patch(id: string, owner: string | null, patch: VideoPatch): Promise<boolean>;
  /** Delivered files whose expires_at passed and that are still on disk. */
  expiredFiles(now: Date, limit: number): Promise<{ id: string; fileName: string }[]>;
  /** The secret that signs download addresses (created once, shared by every process). */
  urlSecret(): Promise<string>;
}

/** Inserts a new job, queued; no row when the wallet already used its idempotency key. */
async function insertNewJob(db: Db, j: NewVideoJob): Promise<Record<string, unknown> | undefined> {
  const cols = [
    'id',
    'wallet_id',
    'key_id',
    'idempotency_key',
    'model',
    'vendor',
    'seconds',
    'size',
    'resolution',
    'status',
    'hold_ref',
    'hold_nano',
    'vendor_request',
    'created_at',
    'deadline_wall',
    'next_poll_at',
    'lease_owner',
    'lease_until',
  ];
  const values = [
    j.id,
    j.walletId,
    j.keyId,
    j.idempotencyKey,
    j.model,
    j.vendor,
    j.seconds,
    j.size,
    j.resolution,
    'queued',
    j.holdRef,
    j.holdNano,
    j.vendorRequest,
    j.createdAt,
    j.deadlineWall,
    j.nextPollAt,
    j.leaseOwner,
    j.leaseUntil,
  ].map(param);
  const casts: Record<string, string> = { hold_nano: '::bigint', vendor_request: '::jsonb' };
  const placeholders = cols.map(
    (c, i) => `$${i + 1}${casts[c] ?? (c.endsWith('_at') || c.endsWith('_wall') || c.endsWith('_until') ? '::timestamptz' : '')}`,
  );
  const res = await db.query(
    `INSERT INTO video_jobs (${cols.join(', ')}) VALUES (${placeholders.join(', ')})
     ON CONFLICT (wallet_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING *`,
    values,
  );
  return res.rows[0];
}

/** Writes a patch, only while `owner` holds the lease (null: no lease condition); false when no row was written. */
async function patchJob(db: Db, id: string, owner: string | null, p: VideoPatch): Promise<boolean> {
  const sets: string[] = [];
  const params: unknown[] = [id];
  for (const [k, v] of Object.entries(p)) {
    const col = COLUMNS[k as keyof typeof COLUMNS];
    if (!col || v === undefined) continue;
    params.push(param(v));
    const cast =
      col === 'vendor_request'
        ? '::jsonb'
        : col.endsWith('_nano') || col === 'file_bytes'
          ? '::bigint'
          : /_at$|_until$/.test(col)
            ? '::timestamptz'
            : '';
    sets.push(`${col} = $${params.length}${cast}`);
  }
  if (sets.length === 0) return true;
  let where = 'id = $1';
  if (owner !== null) {
    params.push(owner);
    where += ` AND lease_owner = $${params.length}`;
  }
  const res = await db.query(`UPDATE video_jobs SET ${sets.join(', ')} WHERE ${where} RETURNING id`, params);
  return res.rowCount > 0;
}

export function createVideoStore(db: Db): VideoStore {
  return {
    async insert(j) {
      const row = await insertNewJob(db, j);
      if (row) return { job: fromRow(row), created: true };
      const first = j.idempotencyKey ? await this.byIdempotencyKey(j.walletId, j.idempotencyKey) : null;
      if (!first) throw new Error(`video job ${j.id} was neither inserted nor found by its idempotency key`);
      return { job: first, created: false };
    },

    async byIdempotencyKey(walletId, key) {
      const res = await db.query(`SELECT * FROM video_jobs WHERE wallet_id = $1 AND idempotency_key = $2`, [walletId, key]);
      return res.rows[0] ? fromRow(res.rows[0]) : null;
    },

    async get(id) {
      const res = await db.query(`SELECT * FROM video_jobs WHERE id = $1`, [id]);
      return res.rows[0] ? fromRow(res.rows[0]) : null;
    },

    async list(walletId, { limit, afterSeq, order, now }) {
      const dir = order === 'asc' ? 'ASC' : 'DESC';
      const cmp = order === 'asc' ? '>' : '<';
      const params: unknown[] = [walletId, now.toISOString(), limit + 1];
      let cursor = '';
      if (afterSeq !== undefined) {
        params.push(afterSeq.toString());
        cursor = `AND seq ${cmp} $4::bigint`;
      }
      const res = await db.query(
        `SELECT * FROM video_jobs
         WHERE wallet_id = $1 AND deleted_at IS NULL AND (visible_until IS NULL OR visible_until > $2::timestamptz) ${cursor}
         ORDER BY seq ${dir} LIMIT $3`,
        params,
      );
      return res.rows.map(fromRow);
    },

    async claim(owner, wallNow, leaseUntil, limit) {
      const res = await db.query(
        `UPDATE video_jobs SET lease_owner = $1, lease_until = $3::timestamptz
         WHERE id IN (
           SELECT id FROM video_jobs
           WHERE status IN ('queued', 'in_progress') AND next_poll_at <= $2::timestamptz
             AND (lease_until IS NULL OR lease_until < $2::timestamptz)
           ORDER BY next_poll_at
           LIMIT $4
           FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [owner, wallNow.toISOString(), leaseUntil.toISOString(), limit],
      );
      return res.rows.map(fromRow);
    },

    patch: (id, owner, p) => patchJob(db, id, owner, p),

    async expiredFiles(now, limit) {
      const res = await db.query<{ id: string; file_name: string }>(
        `SELECT id, file_name FROM video_jobs
         WHERE file_name IS NOT NULL AND file_deleted_at IS NULL AND expires_at <= $1::timestamptz
         ORDER BY expires_at LIMIT $2`,
        [now.toISOString(), limit],
      );
      return res.rows.map((r) => ({ id: r.id, fileName: r.file_name }));
    },

    async urlSecret() {
      await db.query(`INSERT INTO video_settings (id, url_secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, [
        randomBytes(32).toString('hex'),
      ]);
      const res = await db.query<{ url_secret: string }>(`SELECT url_secret FROM video_settings WHERE id = 1`);
      return res.rows[0]!.url_secret; // inserted above when missing
    },
  };
}
