// The people a wallet's owner lets into its dashboard, each with a role (owner, manager, viewer), and the lookup
// sign-in makes. The wallet's owner is not a row here but whoever `owner_id` names, so changing owners stays the
// operator's business; every change here is audited in its own transaction.

import { type Actor, recordAudit } from '../audit/trail.ts';
import { errors } from '../core/errors.ts';
import type { Db } from '../db/db.ts';
import type { MatchBy } from './provider.ts';

export const ROLES = ['owner', 'manager', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

interface Manager {
  identity: string;
  role: Role;
  addedBy: string;
  addedAt: Date;
}

/** A wallet this identity may open, and as what. */
export interface WalletAccess {
  walletId: string;
  role: Role;
  /** True when the identity is the wallet's owner itself (owner_id), not a manager row. */
  asOwner: boolean;
  /** The wallet's owner id when looked up: a session opens only while it still is. */
  ownerId: string;
}

const MAX_IDENTITY = 200;

/** The identity as rows hold it: an e-mail in lower case, a subject as given; 400 naming the field otherwise. */
export function normalizeIdentity(raw: string, matchBy: MatchBy): string {
  const v = raw.trim().normalize('NFC');
  if (v === '' || [...v].length > MAX_IDENTITY)
    throw errors.invalidRequest(`identity must be 1 to ${MAX_IDENTITY} characters.`, 'identity');
  if (matchBy === 'email') {
    if (!/^[^\s@]+@[^\s@]+$/.test(v))
      throw errors.invalidRequest('identity must be an e-mail address (this gateway signs people in by e-mail).', 'identity');
    return v.toLowerCase();
  }
  return v;
}

export function parseRole(raw: unknown): Role {
  if (typeof raw !== 'string' || !(ROLES as readonly string[]).includes(raw))
    throw errors.invalidRequest(`role must be one of ${ROLES.join(', ')}.`, 'role');
  return raw as Role;
}

export async function listManagers(db: Db, walletId: string): Promise<Manager[]> {
  const res = await db.query<{ identity: string; role: Role; added_by: string; added_at: Date | string }>(
    `SELECT identity, role, added_by, added_at FROM wallet_managers WHERE wallet_id = $1 ORDER BY added_at, identity`,
    [walletId],
  );
  return res.rows.map((r) => ({ identity: r.identity, role: r.role, addedBy: r.added_by, addedAt: new Date(r.added_at) }));
}

/** Adds the identity with the role, or changes its role; what happened, for the page to say. */
export async function setManager(
  db: Db,
  walletId: string,
  identity: string,
  role: Role,
  actor: Actor,
  now: Date,
): Promise<'added' | 'changed' | 'unchanged'> {
  return db.transaction(async (tx) => {
    const before = await tx.query<{ role: Role }>(`SELECT role FROM wallet_managers WHERE wallet_id = $1 AND identity = $2 FOR UPDATE`, [
      walletId,
      identity,
    ]);
    const was = before.rows[0]?.role;
    if (was === role) return 'unchanged';
    if (was === undefined) {
      await tx.query(
        `INSERT INTO wallet_managers (wallet_id, identity, role, added_by, added_at) VALUES ($1, $2, $3, $4, $5::timestamptz)`,
        [walletId, identity, role, actor.id ?? actor.kind, now.toISOString()],
      );
    } else {
      await tx.query(`UPDATE wallet_managers SET role = $3 WHERE wallet_id = $1 AND identity = $2`, [walletId, identity, role]);
    }
    await recordAudit(
      tx,
      actor,
      {
        walletId,
        action: was === undefined ? 'manager.added' : 'manager.changed',
        targetId: identity,
        before: was === undefined ? null : { identity, role: was },
        after: { identity, role },
      },
      now,
    );
    return was === undefined ? 'added' : 'changed';
  });
}

/** Removes the identity's access; its sessions end at their next request (sessions.ts re-reads the row). 404 when absent. */
export async function removeManager(db: Db, walletId: string, identity: string, actor: Actor, now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    const gone = await tx.query<{ role: Role }>(`DELETE FROM wallet_managers WHERE wallet_id = $1 AND identity = $2 RETURNING role`, [
      walletId,
      identity,
    ]);
    const row = gone.rows[0];
    if (!row) throw errors.notFound(`No manager '${identity}' in this wallet.`);
    await recordAudit(
      tx,
      actor,
      { walletId, action: 'manager.removed', targetId: identity, before: { identity, role: row.role }, after: null },
      now,
    );
  });
}

/**
 * The wallets this identity owns (owner_id equal to it; for e-mail matching, equal ignoring case) or manages,
 * oldest first. A wallet it both owns and manages is listed once, as owner.
 */
export async function walletsFor(db: Db, identity: string, matchBy: MatchBy): Promise<WalletAccess[]> {
  const ownerTest = matchBy === 'email' ? 'lower(w.owner_id) = $1' : 'w.owner_id = $1';
  const res = await db.query<{ wallet_id: string; role: Role; as_owner: boolean; owner_id: string }>(
    `SELECT w.id AS wallet_id, 'owner' AS role, true AS as_owner, w.owner_id, w.created_at FROM wallets w WHERE ${ownerTest}
     UNION ALL
     SELECT m.wallet_id, m.role, false, w.owner_id, w.created_at FROM wallet_managers m JOIN wallets w ON w.id = m.wallet_id
      WHERE m.identity = $1 AND NOT (${ownerTest})
     ORDER BY created_at, wallet_id`,
    [identity],
  );
  return res.rows.map((r) => ({ walletId: r.wallet_id, role: r.role, asOwner: r.as_owner, ownerId: r.owner_id }));
}
