// The audit trail of a wallet: one row per change, saying who made it, from where, and the values before and after.
// Written with the change's own transaction so a change and its record commit together; never a secret.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/db.ts';

export const AUDIT_ACTIONS = [
  'key.created',
  'key.changed',
  'key.closed',
  'management_key.created',
  'management_key.closed',
  'owner.changed',
  'wallet.renamed',
  'credits.added',
  'credits.expired',
  'manager.added',
  'manager.changed',
  'manager.removed',
  'webhook.created',
  'webhook.deleted',
  'alerts.changed',
  'key_group.created',
  'key_group.changed',
  'key_group.deleted',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * Who made a change: the owner signed in to the dashboard, a manager the owner let in (signed in through the
 * identity provider), a management key on the key doors, the operator, or the gateway itself (a lot's expiry).
 */
export interface Actor {
  kind: 'owner' | 'manager' | 'management_key' | 'operator' | 'system';
  /** The owner id, the manager's identity, the management key's id, or how the operator came (`admin_api`, `cli`). */
  id: string | null;
  /** Where the request came from; null where there was no request (a command on the operator's machine). */
  ip: string | null;
  userAgent: string | null;
}

/** The operator at a command line: no request, so no address or user agent. */
export const CLI_OPERATOR: Actor = { kind: 'operator', id: 'cli', ip: null, userAgent: null };

export interface AuditChange {
  walletId: string;
  action: AuditAction;
  /** The key or credit lot the change is about; null for the wallet itself. */
  targetId: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/** Where a request came from, for an Actor. The user agent is cut to a length a log line can hold. */
export function requestOrigin(req: {
  ip: string;
  headers: Record<string, string | string[] | undefined>;
}): Pick<Actor, 'ip' | 'userAgent'> {
  const ua = req.headers['user-agent'];
  const userAgent = Array.isArray(ua) ? ua[0] : ua;
  return { ip: req.ip || null, userAgent: userAgent ? userAgent.slice(0, 300) : null };
}

export async function recordAudit(q: Queryable, actor: Actor, change: AuditChange, at: Date): Promise<void> {
  await q.query(
    `INSERT INTO wallet_audit (id, wallet_id, at, actor_kind, actor_id, action, target_id, ip, user_agent, before, after)
     VALUES ($1, $2, $3::timestamptz, $4, $5, $6, $7, $8, $9, $10::jsonb, $11::jsonb)`,
    [
      `aud_${randomUUID()}`,
      change.walletId,
      at.toISOString(),
      actor.kind,
      actor.id,
      change.action,
      change.targetId,
      actor.ip,
      actor.userAgent,
      change.before === null ? null : JSON.stringify(change.before),
      change.after === null ? null : JSON.stringify(change.after),
    ],
  );
}

/** Only the fields whose values differ, as `before` and `after` of a change. */
export function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const out = { before: {} as Record<string, unknown>, after: {} as Record<string, unknown> };
  for (const field of Object.keys(after)) {
    if (JSON.stringify(before[field] ?? null) === JSON.stringify(after[field] ?? null)) continue;
    out.before[field] = before[field] ?? null;
    out.after[field] = after[field] ?? null;
  }
  return out;
}
