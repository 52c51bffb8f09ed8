// The owner's sign-in links and sessions, in the database so any process honours them. Links and sessions belong
// to the wallet's ownership generation and are re-read at every request, so signing out, expiry and a change of
// owner take effect at once. A session's random `csrf_token` value is what its CSRF tokens are bound to (session-http.ts;
// docs/decisions/dashboard-sign-in.md).
import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import type { Role, WalletAccess } from '../identity/managers.ts';

const SIGN_IN_TTL_MS = 15 * 60_000;
const SESSION_TTL_MS = 12 * 3_600_000;

/** Who is signed in: the wallet the session opens (nothing else), as what, and who it is. */
export interface OwnerSession {
  walletId: string;
  ownerId: string;
  /** The session's random value its forms' CSRF tokens are bound to (session-http.ts); never sent to the browser. */
  csrfBinding: string;
  expiresAt: Date;
  /** What the session may do (dashboard/roles.ts): link sessions and the owner's own are 'owner'. */
  role: Role;
  /** Who acts, for the audit trail: the owner id, or the manager's identity. */
  actorId: string;
  /** True for a manager's session (its actor is a manager, even with the role owner). */
  isManager: boolean;
  via: 'link' | 'provider';
}

export interface SignInLink {
  token: string;
  walletId: string;
  expiresAt: Date;
}

export interface SessionStore {
  /** How long a session lasts, for the cookie's Max-Age. */
  readonly sessionSeconds: number;
  /** A one-time sign-in token for the wallet's current owner; null when there is no such wallet. */
  issueSignIn(walletId: string): Promise<SignInLink | null>;
  /** Spends the token and opens a session (its secret goes in the cookie); null when the token is unknown, used, expired or its owner changed. */
  redeem(token: string): Promise<{ secret: string; session: OwnerSession } | null>;
  /** Opens a session for an identity the provider vouched for, if it still has this access; null otherwise. */
  openFor(access: WalletAccess, identity: string): Promise<{ secret: string; session: OwnerSession } | null>;
  /** The live session of this secret, or null. */
  find(secret: string | undefined): Promise<OwnerSession | null>;
  /** Ends the session (sign-out). */
  end(secret: string): Promise<void>;
}

const hash = (secret: string) => createHash('sha256').update(secret).digest('hex');
const newSecret = () => randomBytes(32).toString('base64url');

/**
 * Spends a sign-in token and opens its session, in one transaction; null when the token is unknown, used,
 * expired or from an earlier ownership of the wallet.
 */
function spendLink(db: Db, token: string, now: Date, sessionMs: number): Promise<{ secret: string; session: OwnerSession } | null> {
  return db.transaction(async (tx) => {
    // Spent in the same statement that checks it, so two tabs racing on one link open one session.
    const spent = await tx.query<{ wallet_id: string; owner_id: string; owner_generation: string }>(
      `UPDATE dashboard_sign_in_tokens t SET used_at = $2::timestamptz
         FROM wallets w
        WHERE t.token_hash = $1 AND t.used_at IS NULL AND t.expires_at > $2::timestamptz
          AND w.id = t.wallet_id AND w.owner_id = t.owner_id AND w.owner_generation = t.owner_generation
        RETURNING t.wallet_id, t.owner_id, t.owner_generation::text`,
      [hash(token), now.toISOString()],
    );
    const row = spent.rows[0];
    if (!row) return null;
    const secret = newSecret();
    const session: OwnerSession = {
      walletId: row.wallet_id,
      ownerId: row.owner_id,
      csrfBinding: newSecret(),
      expiresAt: new Date(now.getTime() + sessionMs),
      role: 'owner',
      actorId: row.owner_id,
      isManager: false,
      via: 'link',
    };
    await tx.query(
      `INSERT INTO dashboard_sessions (session_hash, wallet_id, owner_id, owner_generation, csrf_token, created_at, expires_at, role, actor_id, via, is_manager)
       VALUES ($1, $2, $3, $4::bigint, $5, $6::timestamptz, $7::timestamptz, 'owner', $3, 'link', false)`,
      [
        hash(secret),
        session.walletId,
        session.ownerId,
        row.owner_generation,
        session.csrfBinding,
        now.toISOString(),
        session.expiresAt.toISOString(),
      ],
    );
    return { secret, session };
  });
}

/** The session of this secret while it lasts, its wallet's owner is unchanged and, for a manager, the role holds. */
async function liveSession(db: Db, secret: string, now: Date): Promise<OwnerSession | null> {
  const res = await db.query<{
    wallet_id: string;
    owner_id: string;
    csrf_token: string;
    expires_at: Date | string;
    role: Role;
    actor_id: string | null;
    is_manager: boolean;
    via: 'link' | 'provider';
  }>(
    `SELECT s.wallet_id, s.owner_id, s.csrf_token, s.expires_at, s.actor_id, s.is_manager, s.via,
            CASE WHEN s.is_manager THEN m.role ELSE s.role END AS role
       FROM dashboard_sessions s JOIN wallets w ON w.id = s.wallet_id
       LEFT JOIN wallet_managers m ON s.is_manager AND m.wallet_id = s.wallet_id AND m.identity = s.actor_id
      WHERE s.session_hash = $1 AND s.expires_at > $2::timestamptz
        AND w.owner_id = s.owner_id AND w.owner_generation = s.owner_generation
        AND (NOT s.is_manager OR m.role IS NOT NULL)`,
    [hash(secret), now.toISOString()],
  );
  const r = res.rows[0];
  return r
    ? {
        walletId: r.wallet_id,
        ownerId: r.owner_id,
        csrfBinding: r.csrf_token,
        expiresAt: new Date(r.expires_at),
        role: r.role,
        actorId: r.actor_id ?? r.owner_id,
        isManager: r.is_manager,
        via: r.via,
      }
    : null;
}

export function createSessionStore(db: Db, clock: Clock, ttl: { signInMs?: number; sessionMs?: number } = {}): SessionStore {
  const signInMs = ttl.signInMs ?? SIGN_IN_TTL_MS;
  const sessionMs = ttl.sessionMs ?? SESSION_TTL_MS;

  /** Expired rows are useless; dropping them at each sign-in keeps both tables small without a timer. */
  async function prune(now: Date) {
    await db.query(`DELETE FROM dashboard_sign_in_tokens WHERE expires_at < $1::timestamptz`, [now.toISOString()]);
    await db.query(`DELETE FROM dashboard_sessions WHERE expires_at < $1::timestamptz`, [now.toISOString()]);
  }

  return {
    sessionSeconds: Math.floor(sessionMs / 1000),

    async issueSignIn(walletId) {
      const now = clock.now();
      const token = newSecret();
      const expiresAt = new Date(now.getTime() + signInMs);
      const res = await db.query(
        `INSERT INTO dashboard_sign_in_tokens (token_hash, wallet_id, owner_id, owner_generation, created_at, expires_at)
         SELECT $1, w.id, w.owner_id, w.owner_generation, $3::timestamptz, $4::timestamptz FROM wallets w WHERE w.id = $2
         RETURNING wallet_id`,
        [hash(token), walletId, now.toISOString(), expiresAt.toISOString()],
      );
      return res.rows.length ? { token, walletId, expiresAt } : null;
    },

    async redeem(token) {
      const now = clock.now();
      await prune(now);
      return spendLink(db, token, now, sessionMs);
    },

    async openFor(access, identity) {
      const now = clock.now();
      await prune(now);
      const secret = newSecret();
      const csrfBinding = newSecret();
      const expiresAt = new Date(now.getTime() + sessionMs);
      const isManager = !access.asOwner;
      // The access is checked again in the statement that opens the session: a manager removed (or an owner
      // changed) since the lookup opens nothing.
      const res = await db.query<{ owner_id: string; role: Role }>(
        `INSERT INTO dashboard_sessions (session_hash, wallet_id, owner_id, owner_generation, csrf_token, created_at, expires_at, role, actor_id, via, is_manager)
         SELECT $1, w.id, w.owner_id, w.owner_generation, $3, $4::timestamptz, $5::timestamptz,
                CASE WHEN $7::boolean THEN m.role ELSE 'owner' END, CASE WHEN $7::boolean THEN $6 ELSE w.owner_id END, 'provider', $7::boolean
           FROM wallets w LEFT JOIN wallet_managers m ON m.wallet_id = w.id AND m.identity = $6
          WHERE w.id = $2 AND w.owner_id = $8 AND (NOT $7::boolean OR m.role IS NOT NULL)
         RETURNING owner_id, role`,
        [hash(secret), access.walletId, csrfBinding, now.toISOString(), expiresAt.toISOString(), identity, isManager, access.ownerId],
      );
      const row = res.rows[0];
      if (!row) return null;
      return {
        secret,
        session: {
          walletId: access.walletId,
          ownerId: row.owner_id,
          csrfBinding,
          expiresAt,
          role: row.role,
          actorId: isManager ? identity : row.owner_id,
          isManager,
          via: 'provider',
        },
      };
    },

    async find(secret) {
      if (!secret) return null;
      return liveSession(db, secret, clock.now());
    },

    async end(secret) {
      await db.query(`DELETE FROM dashboard_sessions WHERE session_hash = $1`, [hash(secret)]);
    },
  };
}
