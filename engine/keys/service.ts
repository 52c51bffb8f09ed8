// The key store: authentication, key creation for the operator, revocation across processes.
//
// Lookups of normal API keys are cached in lru-cache (default 30 s) by the secret's sha256. A change to a
// key (close, patch) invalidates the cache in the changing process at once and reaches every other process
// through NOTIFY on channel `key_revoked` (payload: the key id, `wallet:<id>` or `*`), sent with pg_notify
// inside the changing transaction so it is delivered exactly when the change commits. When the listening
// connection drops and comes back, whatever was sent meanwhile is lost, so the whole cache is flushed. Each service LISTENs
// on that channel from its creation until close(). A generation counter stops a lookup that raced with an
// invalidation from putting stale data back into the cache.
//
// Management keys are never cached: every call re-reads the key and the wallet owner, so a management key
// whose creator stopped being the wallet owner is refused (and closed, reason `owner_changed`) at once.
//
// last_used_at is written in batches: authenticate() records the instant in memory and a timer flushes
// all pending instants in one UPDATE every `lastUsedFlushMs` (default 5 s); close() flushes what is left.
import { LRUCache } from 'lru-cache';
import type { Db, Queryable } from '../db/db.ts';
import { errors } from '../core/errors.ts';
import { endOfKoreanDay, type Clock } from '../core/clock.ts';
import { hashSecret, kindOfSecret, sameHash, type KeyKind } from './secret.ts';
import { NANO_PER_CREDIT } from '../core/money.ts';
import { KEY_COLUMNS, keyRowFrom, type AuthContext, type Audience, type KeyGroupContext, type KeyRow } from './types.ts';
import { createQuotaService, type QuotaService } from './quota.ts';
import { getWallet, insertKey, walletMissing } from './store.ts';
import { CLI_OPERATOR, recordAudit, type Actor } from '../audit/trail.ts';

const KEY_CHANNEL = 'key_revoked';

interface KeyServiceOptions {
  clock: Clock;
  /** How long a normal key's lookup is cached (ms). Default 30 000. */
  cacheTtlMs?: number;
  /** Most cached keys. Default 10 000. */
  cacheMax?: number;
  /** How often pending last_used_at instants are written (ms). Default 5 000. */
  lastUsedFlushMs?: number;
}

interface CreateApiKeyOptions {
  name?: string | null;
  audience?: Audience | null;
  monthlyLimitCredits?: number | null;
  dailyLimitCredits?: number | null;
  expiresOn?: string | null;
  /** A person's key of the chat product: hidden from the key doors. */
  isChatKey?: boolean;
}

interface AuthenticateOptions {
  /** The door also takes `x-api-key` (the messages door): the 401 guidance names both headers. */
  allowXApiKey?: boolean;
}

/** A management key an owner change closed, as the operator is told of it. */
export interface ClosedManagementKey {
  id: string;
  name: string | null;
  key_prefix: string;
}

export interface KeyService {
  readonly db: Db;
  readonly clock: Clock;
  readonly quota: QuotaService;
  /** Resolves once the NOTIFY listener is up (authenticate waits for it by itself). */
  ready(): Promise<void>;
  /** The caller of a request, or 401 authentication_error. `kind` is what the door takes. */
  authenticate(secret: string | undefined, kind: KeyKind, opts?: AuthenticateOptions): Promise<AuthContext>;
  /** A normal API key (first-run dev wallet, tests, operator tools). The full key is returned once. */
  createApiKey(walletId: string, opts?: CreateApiKeyOptions): Promise<{ id: string; key: string }>;
  /**
   * A management key made by the wallet's current owner (admin API, dashboard, CLI), recorded in the audit
   * trail as `actor`'s change (default: the operator at a command line). The full key is returned once.
   */
  createManagementKey(walletId: string, name?: string | null, actor?: Actor): Promise<{ id: string; key: string }>;
  /** Closes a key at once, whatever its kind; false when it was already closed or does not exist. */
  closeKey(keyId: string, reason?: string): Promise<boolean>;
  /** Closes the wallet's management keys whose creator is no longer the owner, and says which (never a secret). */
  closeFormerOwnerManagementKeys(walletId: string, actor?: Actor): Promise<ClosedManagementKey[]>;
  /**
   * Drops cached lookups of these keys here at once and, through pg_notify on `q` (delivered when q's
   * transaction commits), in every other process.
   */
  announce(keyIds: string[], q?: Queryable): Promise<void>;
  /** Drops cached lookups of these keys in this process only (after a commit that changed them). */
  forget(keyIds: string[]): void;
  /** Writes pending last_used_at instants now. */
  flushLastUsed(): Promise<void>;
  /** A last use recorded in memory and not yet written, if any (so records show it at once). */
  pendingLastUsed(keyId: string): Date | undefined;
  /** Stops the listener and the timer, flushes last_used_at. */
  close(): Promise<void>;
}

interface CacheEntry {
  row: KeyRow;
  splitsUsage: boolean;
  group: KeyGroupContext | null;
}

const HEADER_HINT = {
  api: 'Authorization: Bearer <API_KEY>',
  management: 'Authorization: Bearer <MANAGEMENT_KEY>',
};

function missingMessage(kind: KeyKind, opts: AuthenticateOptions): string {
  if (kind === 'management') {
    return `Missing management key. Send it as the header \`${HEADER_HINT.management}\` (keys start with sk-svcm-).`;
  }
  return opts.allowXApiKey
    ? `Missing API key. Send it as the header \`${HEADER_HINT.api}\` or \`x-api-key: <API_KEY>\`.`
    : `Missing API key. Send it as the header \`${HEADER_HINT.api}\`.`;
}

function wrongKindMessage(door: KeyKind): string {
  return door === 'management'
    ? 'The key-management doors take only a management key (sk-svcm-…); a normal API key was sent.'
    : 'Management keys (sk-svcm-…) cannot call this door; use a normal API key (sk-svc-…).';
}

const INVALID_MESSAGE = 'Invalid API key: no key matches it. Check the key, or create a new one.';

const limitNano = (credits: unknown): bigint | null => (credits == null ? null : BigInt(String(credits)) * NANO_PER_CREDIT);

/** The key's group as the key's lookup joined it (a deleted group is none). */
function groupFrom(r: Record<string, unknown>): KeyGroupContext | null {
  if (r.g_id == null) return null;
  return { id: String(r.g_id), name: String(r.g_name), monthlyLimitNano: limitNano(r.g_monthly), dailyLimitNano: limitNano(r.g_daily) };
}

function toContext(row: KeyRow, splitsUsage: boolean, group: KeyGroupContext | null): AuthContext {
  return {
    keyId: row.id,
    walletId: row.walletId,
    kind: row.kind,
    audience: splitsUsage ? row.audience : null,
    keyPrefix: row.keyPrefix,
    monthlyLimitNano: limitNano(row.monthlyLimitCredits),
    dailyLimitNano: limitNano(row.dailyLimitCredits),
    splitsUsage,
    expiresOn: row.expiresOn,
    expiresAt: row.expiresOn ? endOfKoreanDay(row.expiresOn) : null,
    models: row.models,
    group,
  };
}

/** Extracts the key from `Authorization: Bearer …` (or `x-api-key` when allowed); undefined when absent. */
export function keyFromHeaders(
  headers: Record<string, string | string[] | undefined>,
  opts: { allowXApiKey: boolean },
): string | undefined {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const auth = first(headers.authorization ?? headers.Authorization);
  if (typeof auth === 'string') {
    const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1];
  }
  if (opts.allowXApiKey) {
    const x = first(headers['x-api-key'] ?? headers['X-Api-Key']);
    if (typeof x === 'string' && x.trim() !== '') return x.trim();
  }
  return undefined;
}

export function createKeyService(db: Db, opts: KeyServiceOptions): KeyService {
  const clock = opts.clock;
  const quota = createQuotaService(db);
  const cache = new LRUCache<string, CacheEntry>({ max: opts.cacheMax ?? 10_000, ttl: opts.cacheTtlMs ?? 30_000 });
  let generation = 0;
  let closed = false;
  const pendingUse = new Map<string, Date>();

  function invalidate(payload: string) {
    generation++;
    if (payload === '*') {
      cache.clear();
      return;
    }
    const walletId = payload.startsWith('wallet:') ? payload.slice(7) : null;
    for (const [hash, entry] of cache.entries()) {
      if (walletId ? entry.row.walletId === walletId : entry.row.id === payload) cache.delete(hash);
    }
  }

  let unlisten: (() => Promise<void>) | null = null;
  // A reconnected listener may have missed closes and patches: every cached lookup goes.
  const listening = db
    .listen(
      KEY_CHANNEL,
      (payload) => invalidate(payload),
      () => invalidate('*'),
    )
    .then((stop) => {
      unlisten = stop;
    });
  // Keep an unhandled rejection from crashing the process; authenticate awaits `listening` and fails with 503.
  listening.catch(() => undefined);

  const flushMs = opts.lastUsedFlushMs ?? 5_000;
  const timer = setInterval(() => {
    flushLastUsed().catch(() => undefined);
  }, flushMs);
  timer.unref?.();

  async function flushLastUsed(): Promise<void> {
    if (pendingUse.size === 0) return;
    const batch = [...pendingUse.entries()].map(([id, at]) => ({ id, at: at.toISOString() }));
    pendingUse.clear();
    await db.query(
      `UPDATE api_keys SET last_used_at = GREATEST(COALESCE(last_used_at, u.at), u.at)
         FROM jsonb_to_recordset($1::jsonb) AS u(id text, at timestamptz)
        WHERE api_keys.id = u.id`,
      [JSON.stringify(batch)],
    );
  }

  async function load(hash: string): Promise<(CacheEntry & { ownerId: string }) | null> {
    const res = await db.query(
      `SELECT ${KEY_COLUMNS}, w.owner_id AS w_owner_id, w.splits_usage AS w_splits_usage, g.id AS g_id, g.name AS g_name,
              g.monthly_limit_credits::text AS g_monthly, g.daily_limit_credits::text AS g_daily
         FROM api_keys k JOIN wallets w ON w.id = k.wallet_id
         LEFT JOIN key_groups g ON g.id = k.group_id AND g.deleted_at IS NULL
        WHERE k.secret_hash = $1`,
      [hash],
    );
    const r = res.rows[0];
    if (!r) return null;
    return { row: keyRowFrom(r), splitsUsage: r.w_splits_usage === true, group: groupFrom(r), ownerId: String(r.w_owner_id) };
  }

  // Concurrent lookups of one uncached API key (a client's burst right after it starts, or after the cache
  // entry expired) share one query instead of taking a pooled connection each, unless an invalidation came
  // between them: a lookup begun after one reads the key again.
  const loading = new Map<string, { gen: number; loaded: ReturnType<typeof load> }>();
  function loadShared(hash: string): ReturnType<typeof load> {
    const current = loading.get(hash);
    if (current && current.gen === generation) return current.loaded;
    const loaded = load(hash).finally(() => {
      if (loading.get(hash)?.loaded === loaded) loading.delete(hash);
    });
    loading.set(hash, { gen: generation, loaded });
    return loaded;
  }

  async function announce(keyIds: string[], q: Queryable = db): Promise<void> {
    for (const id of keyIds) invalidate(id);
    for (const id of keyIds) await q.query('SELECT pg_notify($1, $2)', [KEY_CHANNEL, id]);
  }

  async function closeKey(keyId: string, reason = 'deleted'): Promise<boolean> {
    const now = clock.now();
    const done = await db.transaction(async (tx) => {
      const res = await tx.query(
        `UPDATE api_keys SET closed_at = $2::timestamptz, closed_reason = $3 WHERE id = $1 AND closed_at IS NULL RETURNING id`,
        [keyId, now.toISOString(), reason],
      );
      if (res.rows.length > 0) await announce([keyId], tx);
      return res.rows.length > 0;
    });
    invalidate(keyId);
    return done;
  }

  async function closeFormerOwnerManagementKeys(walletId: string, actor?: Actor): Promise<ClosedManagementKey[]> {
    const now = clock.now();
    const closed = await db.transaction(async (tx) => {
      const res = await tx.query<ClosedManagementKey>(
        `UPDATE api_keys k SET closed_at = $2::timestamptz, closed_reason = 'owner_changed'
           FROM wallets w
          WHERE w.id = k.wallet_id AND k.wallet_id = $1 AND k.kind = 'management' AND k.closed_at IS NULL
            AND k.created_by IS DISTINCT FROM w.owner_id
          RETURNING k.id, k.name, k.key_prefix`,
        [walletId, now.toISOString()],
      );
      await announce(
        res.rows.map((r) => r.id),
        tx,
      );
      const closed = res.rows.map((r) => ({ id: r.id, name: r.name ?? null, key_prefix: r.key_prefix }));
      // Closed by whoever changed the owner, recorded as they are when closed one by one, with the reason.
      if (actor) {
        for (const k of closed) {
          const before = { status: 'active', name: k.name, key_prefix: k.key_prefix };
          const after = { status: 'closed', reason: 'owner_changed' };
          await recordAudit(tx, actor, { walletId, action: 'management_key.closed', targetId: k.id, before, after }, now);
        }
      }
      return closed;
    });
    for (const k of closed) invalidate(k.id);
    return closed;
  }

  return {
    db,
    clock,
    quota,
    ready: () => listening,

    async authenticate(secret, kind, aopts = {}) {
      if (closed) throw errors.unavailable('The service is shutting down. Retry later.');
      if (secret === undefined || secret === '') throw errors.authentication(missingMessage(kind, aopts));
      const claimed = kindOfSecret(secret);
      if (claimed === null) throw errors.authentication(INVALID_MESSAGE);
      if (claimed !== kind) throw errors.authentication(wrongKindMessage(kind));
      await listening;

      const hash = hashSecret(secret);
      const now = clock.now();
      let entry: CacheEntry | undefined = kind === 'api' ? cache.get(hash) : undefined;
      let ownerId: string | null = null;
      if (!entry) {
        const gen = generation;
        const loaded = kind === 'api' ? await loadShared(hash) : await load(hash);
        if (!loaded || !sameHash(loaded.row.secretHash, hash)) throw errors.authentication(INVALID_MESSAGE);
        entry = { row: loaded.row, splitsUsage: loaded.splitsUsage, group: loaded.group };
        ownerId = loaded.ownerId;
        if (kind === 'api' && gen === generation && !loaded.row.closedAt) cache.set(hash, entry);
      }
      const row = entry.row;
      if (row.kind !== kind) throw errors.authentication(wrongKindMessage(kind));
      if (row.closedAt) {
        throw errors.authentication(
          row.kind === 'management'
            ? 'This management key is closed (revoked, or its creator is no longer the wallet owner).'
            : 'This key is closed (revoked) and cannot be used again.',
        );
      }
      if (row.expiresOn && now.getTime() >= endOfKoreanDay(row.expiresOn).getTime()) {
        throw errors.authentication(
          `This key expired at ${endOfKoreanDay(row.expiresOn).toISOString()} (it was usable until ${row.expiresOn}, Korean time).`,
        );
      }
      if (row.kind === 'management' && row.createdBy !== ownerId) {
        await closeFormerOwnerManagementKeys(row.walletId);
        throw errors.authentication('This management key closed itself: its creator is no longer the wallet owner.');
      }
      pendingUse.set(row.id, now);
      return toContext(row, entry.splitsUsage, entry.group);
    },

    async createApiKey(walletId, copts = {}) {
      const wallet = await getWallet(db, walletId);
      if (!wallet) throw walletMissing(walletId);
      const { row, key } = await insertKey(db, {
        walletId,
        kind: 'api',
        name: copts.name ?? null,
        audience: wallet.splitsUsage ? (copts.audience ?? 'student') : null,
        monthlyLimitCredits: copts.monthlyLimitCredits ?? null,
        dailyLimitCredits: copts.dailyLimitCredits ?? null,
        expiresOn: copts.expiresOn ?? null,
        isChatKey: copts.isChatKey ?? false,
        createdAt: clock.now(),
      });
      return { id: row.id, key };
    },

    async createManagementKey(walletId, name = null, actor = CLI_OPERATOR) {
      const wallet = await getWallet(db, walletId);
      if (!wallet) throw walletMissing(walletId);
      const now = clock.now();
      const { row, key } = await db.transaction(async (tx) => {
        const made = await insertKey(tx, { walletId, kind: 'management', name, createdBy: wallet.ownerId, createdAt: now });
        const after = { name: made.row.name, key_prefix: made.row.keyPrefix, created_by: made.row.createdBy };
        await recordAudit(tx, actor, { walletId, action: 'management_key.created', targetId: made.row.id, before: null, after }, now);
        return made;
      });
      return { id: row.id, key };
    },

    closeKey,
    closeFormerOwnerManagementKeys,
    announce,
    flushLastUsed,
    forget: (keyIds) => {
      for (const id of keyIds) invalidate(id);
    },
    pendingLastUsed: (keyId) => pendingUse.get(keyId),

    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await flushLastUsed().catch(() => undefined);
      await listening.catch(() => undefined);
      if (unlisten) await (unlisten as () => Promise<void>)();
    },
  };
}
