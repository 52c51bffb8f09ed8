// A wallet's management keys as the operator sees them (admin API and `gateway management-key list|close`):
// every key ever made, active or closed, and never its secret or the secret's hash.

import { type Actor, recordAudit } from '../audit/trail.ts';
import type { Queryable } from '../db/db.ts';
import type { KeyService } from './service.ts';

interface ManagementKeyRecord {
  object: 'management_key';
  id: string;
  name: string | null;
  /** `sk-svcm-Ab3d…`: the first characters, enough to tell keys apart. */
  key_prefix: string;
  /** The wallet owner who made it; it works only while that owner still owns the wallet. */
  created_by: string | null;
  created_at: string;
  last_used_at: string | null;
  status: 'active' | 'closed';
  closed_at: string | null;
  /** deleted (closed by the operator), owner_changed, …; null while active. */
  closed_reason: string | null;
}

const iso = (v: unknown): string | null => (v == null ? null : (v instanceof Date ? v : new Date(String(v))).toISOString());

/**
 * Oldest first. A key whose creator no longer owns the wallet shows as closed (owner_changed) even before
 * its first refused use writes that down: it would not work, so it is not active.
 */
export async function listManagementKeys(q: Queryable, walletId: string): Promise<ManagementKeyRecord[]> {
  const res = await q.query(
    `SELECT k.id, k.name, k.key_prefix, k.created_by, k.created_at, k.last_used_at, k.closed_at, k.closed_reason,
            (k.created_by IS DISTINCT FROM w.owner_id) AS owner_gone
       FROM api_keys k JOIN wallets w ON w.id = k.wallet_id
      WHERE k.wallet_id = $1 AND k.kind = 'management'
      ORDER BY k.created_at, k.seq`,
    [walletId],
  );
  return res.rows.map((r) => {
    const ownerGone = r.owner_gone === true || r.owner_gone === 't';
    const closed = r.closed_at != null || ownerGone;
    return {
      object: 'management_key',
      id: String(r.id),
      name: r.name == null ? null : String(r.name),
      key_prefix: String(r.key_prefix),
      created_by: r.created_by == null ? null : String(r.created_by),
      created_at: iso(r.created_at) ?? '',
      last_used_at: iso(r.last_used_at),
      status: closed ? 'closed' : 'active',
      closed_at: iso(r.closed_at),
      closed_reason: r.closed_reason != null ? String(r.closed_reason) : ownerGone ? 'owner_changed' : null,
    };
  });
}

/**
 * Closes one open management key of this wallet at once (every process drops it: see service.ts); false
 * when the wallet has no such open key (unknown, another wallet's, a normal key, or closed before).
 */
export async function closeManagementKey(keys: KeyService, walletId: string, keyId: string, actor: Actor): Promise<boolean> {
  const now = keys.clock.now();
  const closed = await keys.db.transaction(async (tx) => {
    const res = await tx.query(
      `UPDATE api_keys SET closed_at = $3::timestamptz, closed_reason = 'deleted'
        WHERE id = $1 AND wallet_id = $2 AND kind = 'management' AND closed_at IS NULL
        RETURNING name, key_prefix`,
      [keyId, walletId, now.toISOString()],
    );
    if (res.rows.length === 0) return false;
    const { name, key_prefix } = res.rows[0] as { name: string | null; key_prefix: string };
    const before = { status: 'active', name, key_prefix };
    await recordAudit(tx, actor, { walletId, action: 'management_key.closed', targetId: keyId, before, after: { status: 'closed' } }, now);
    await keys.announce([keyId], tx);
    return true;
  });
  if (closed) keys.forget([keyId]);
  return closed;
}
