// Reading the audit trail: a wallet's entries, newest first, filtered by action and time, a page at a time
// (`limit` and `offset` as on GET /v1/keys). The key doors (GET /v1/audit), the admin API and the dashboard
// all read it through here; pruning shares the same table.
import { errors } from '../core/errors.ts';
import type { Queryable } from '../db/db.ts';
import { AUDIT_ACTIONS, type AuditAction } from './trail.ts';

interface AuditFilter {
  action?: AuditAction;
  since?: Date | undefined;
  until?: Date | undefined;
  limit: number;
  offset: number;
}

export interface AuditRecord {
  object: 'audit_entry';
  id: string;
  at: string;
  action: string;
  actor: { kind: string; id: string | null };
  target_id: string | null;
  ip: string | null;
  user_agent: string | null;
  before: unknown;
  after: unknown;
}

const LIMIT = { min: 1, max: 500, default: 100 } as const;

function one(query: Record<string, unknown>, name: string): string | undefined {
  const v = query[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw errors.invalidRequest(`${name} must be given once.`, name);
  return v;
}

function instant(v: string | undefined, name: string): Date | undefined {
  if (v === undefined) return undefined;
  const t = /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(t))
    throw errors.invalidRequest(`${name} must be an ISO 8601 instant or date (2026-11-21 or 2026-11-21T09:00:00+09:00).`, name);
  return new Date(t);
}

function whole(v: string | undefined, name: string, min: number, max: number, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max)
    throw errors.invalidRequest(`${name} must be a whole number from ${min} to ${max}.`, name);
  return Number(v);
}

/** The query of an audit listing: `action`, `since`, `until` (ISO instants), `limit` (1–500, default 100), `offset`. */
export function parseAuditQuery(raw: unknown): AuditFilter {
  const q = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const action = one(q, 'action');
  if (action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(action)) {
    throw errors.invalidRequest(`action must be one of ${AUDIT_ACTIONS.join(', ')}.`, 'action');
  }
  return {
    ...(action ? { action: action as AuditAction } : {}),
    ...(one(q, 'since') ? { since: instant(one(q, 'since'), 'since') } : {}),
    ...(one(q, 'until') ? { until: instant(one(q, 'until'), 'until') } : {}),
    limit: whole(one(q, 'limit'), 'limit', LIMIT.min, LIMIT.max, LIMIT.default),
    offset: whole(one(q, 'offset'), 'offset', 0, Number.MAX_SAFE_INTEGER, 0),
  };
}

const iso = (v: unknown) => (v instanceof Date ? v : new Date(String(v))).toISOString();
const json = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : (v ?? null));

/** The wallet's entries matching the filter, newest first, with how many match in all. */
export async function listAudit(
  q: Queryable,
  walletId: string,
  f: AuditFilter,
): Promise<{ data: AuditRecord[]; total: number; has_more: boolean }> {
  const where = `wallet_id = $1 AND ($2::text IS NULL OR action = $2) AND ($3::timestamptz IS NULL OR at >= $3::timestamptz)
    AND ($4::timestamptz IS NULL OR at < $4::timestamptz)`;
  const params = [walletId, f.action ?? null, f.since?.toISOString() ?? null, f.until?.toISOString() ?? null];
  const count = await q.query<{ n: string }>(`SELECT count(*)::text AS n FROM wallet_audit WHERE ${where}`, params);
  const rows = await q.query(
    `SELECT id, at, action, actor_kind, actor_id, target_id, ip, user_agent, before, after FROM wallet_audit
      WHERE ${where} ORDER BY at DESC, seq DESC LIMIT $5 OFFSET $6`,
    [...params, f.limit, f.offset],
  );
  const total = Number(count.rows[0]?.n ?? 0);
  const data = rows.rows.map(
    (r): AuditRecord => ({
      object: 'audit_entry',
      id: String(r.id),
      at: iso(r.at),
      action: String(r.action),
      actor: { kind: String(r.actor_kind), id: r.actor_id == null ? null : String(r.actor_id) },
      target_id: r.target_id == null ? null : String(r.target_id),
      ip: r.ip == null ? null : String(r.ip),
      user_agent: r.user_agent == null ? null : String(r.user_agent),
      before: json(r.before),
      after: json(r.after),
    }),
  );
  return { data, total, has_more: f.offset + data.length < total };
}

/** Removes entries older than `before` (the usage records' sweeper calls it with their cut-off or an older one). */
export async function pruneAudit(q: Queryable, before: Date): Promise<void> {
  await q.query(`DELETE FROM wallet_audit WHERE at < $1::timestamptz`, [before.toISOString()]);
}
