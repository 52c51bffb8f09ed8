// The key store: authentication, key creation for the operator, revocation across processes. Lookups are cached
// and every change is announced to every process before the changing request answers, so a closed key is refused
// everywhere once its owner hears so; management keys are never cached, so an owner change is seen at once
// (engine/keys/README.md, "Caching and revocation").
import { LRUCache } from 'lru-cache';
import { type Actor, CLI_OPERATOR, recordAudit } from '../audit/trail.ts';
import type { Clock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import type { Db, Queryable } from '../db/db.ts';
import { type Announced, AppliedBook, announce, listenForChanges } from './announce.ts';
import { LastUsedBatch } from './last-used.ts';
import {
  type AuthenticateOptions,
  type CacheEntry,
  checkSecretShape,
  INVALID_MESSAGE,
  load,
  refuseUnusable,
  SharedLoader,
  toContext,
} from './lookup.ts';
import { keyNamed, MovingKeys } from './moving-keys.ts';
import { createQuotaService, type QuotaService } from './quota.ts';
import { hashSecret, type KeyKind, sameHash } from './secret.ts';
import { getWallet, insertKey, walletMissing } from './store.ts';
import type { Audience, AuthContext } from './types.ts';

export type { Announced } from './announce.ts';

interface KeyServiceOptions {
  clock: Clock;
  /** How long a normal key's lookup is cached (ms). Default 30 000. */
  cacheTtlMs?: number;
  /** Most cached keys. Default 10 000. */
  cacheMax?: number;
  /** How often pending last_used_at instants are written (ms). Default 5 000. */
  lastUsedFlushMs?: number;
  /** Longest wait of a changing request for the other processes to apply it (ms). Default 2 000. */
  appliedWaitMs?: number;
  /** Where a change not confirmed in time, or a failed confirmation, is told. */
  warn?: (obj: object, msg: string) => void;
  /** Run before this process counts a key change as applied (announce.ts ChangeDeps.beforeApplied). */
  beforeApplied?: (target: string) => Promise<void>;
}

interface CreateApiKeyOptions {
  name?: string | null;
  audience?: Audience | null | undefined;
  monthlyLimitCredits?: number | null;
  dailyLimitCredits?: number | null;
  expiresOn?: string | null;
  /** A person's key of the chat product: hidden from the key doors. */
  isChatKey?: boolean;
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
   * transaction commits), in every other process; await the receipt's `applied()` after the commit, before
   * answering, so the change holds in every process when the client hears of it.
   */
  announce(keyIds: string[], q?: Queryable): Promise<Announced>;
  /** Drops cached lookups of these keys in this process only (after a commit that changed them). */
  forget(keyIds: string[]): void;
  /** Keys moving to another class, and the admissions of calls under way, in this process. */
  readonly moving: MovingKeys;
  /** Writes pending last_used_at instants now. */
  flushLastUsed(): Promise<void>;
  /** A last use recorded in memory and not yet written, if any (so records show it at once). */
  pendingLastUsed(keyId: string): Date | undefined;
  /** Stops the listener and the timer, flushes last_used_at. */
  close(): Promise<void>;
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

/** What the service's parts share: the database, the clock, and dropping cached lookups here and everywhere. */
interface ServiceCore {
  db: Db;
  clock: Clock;
  announce(keyIds: string[], q?: Queryable): Promise<Announced>;
  invalidate(payload: string): void;
}

async function closeKey(core: ServiceCore, keyId: string, reason = 'deleted'): Promise<boolean> {
  const { db, announce, invalidate } = core;
  const now = core.clock.now();
  const announced = await db.transaction(async (tx) => {
    const res = await tx.query(
      `UPDATE api_keys SET closed_at = $2::timestamptz, closed_reason = $3 WHERE id = $1 AND closed_at IS NULL RETURNING id`,
      [keyId, now.toISOString(), reason],
    );
    return res.rows.length > 0 ? await announce([keyId], tx) : null;
  });
  invalidate(keyId);
  await announced?.applied();
  return announced !== null;
}

async function closeFormerOwnerManagementKeys(core: ServiceCore, walletId: string, actor?: Actor): Promise<ClosedManagementKey[]> {
  const { db, announce, invalidate } = core;
  const now = core.clock.now();
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

async function createApiKey(core: ServiceCore, walletId: string, copts: CreateApiKeyOptions = {}): Promise<{ id: string; key: string }> {
  const { db, clock } = core;
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
}

async function createManagementKey(
  core: ServiceCore,
  walletId: string,
  name: string | null = null,
  actor: Actor = CLI_OPERATOR,
): Promise<{ id: string; key: string }> {
  const { db, clock } = core;
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
}

/** Drops the cached lookups a `key_revoked` payload names: a key id, `wallet:<id>` (all its keys) or `*`. */
function dropCached(cache: LRUCache<string, CacheEntry>, payload: string): void {
  if (payload === '*') {
    cache.clear();
    return;
  }
  const walletId = payload.startsWith('wallet:') ? payload.slice(7) : null;
  for (const [hash, entry] of cache.entries()) {
    if (walletId ? entry.row.walletId === walletId : entry.row.id === payload) cache.delete(hash);
  }
}

export function createKeyService(db: Db, opts: KeyServiceOptions): KeyService {
  const clock = opts.clock;
  const quota = createQuotaService(db);
  const cache = new LRUCache<string, CacheEntry>({ max: opts.cacheMax ?? 10_000, ttl: opts.cacheTtlMs ?? 30_000 });
  let generation = 0;
  let closed = false;
  const lastUsed = new LastUsedBatch(db, opts.lastUsedFlushMs ?? 5_000);

  const moving = new MovingKeys();
  function invalidate(payload: string) {
    generation++;
    moving.apply(payload);
    dropCached(cache, keyNamed(payload));
  }

  const warn = opts.warn ?? (() => undefined);
  const book = new AppliedBook();
  const unlisten: (() => Promise<void>)[] = [];
  // A move's announcement is applied once the key's admissions under way have ended, so what they hold is told.
  const beforeApplied = (target: string) => moving.drained(target).then(() => opts.beforeApplied?.(keyNamed(target)));
  // Once the listener is up, authenticate no longer awaits it: every call would pay a turn of the queue for nothing.
  let listened = false;
  const listening = listenForChanges({ db, book, invalidate, warn, beforeApplied }).then((stops) => {
    unlisten.push(...stops);
    listened = true;
  });
  // Keep an unhandled rejection from crashing the process; authenticate awaits `listening` and fails with 503.
  listening.catch(() => undefined);

  const shared = new SharedLoader(db, () => generation);

  const announceDeps = { db, book, invalidate, waitMs: opts.appliedWaitMs ?? 2_000, warn, beforeApplied };
  const announceKeys = (keyIds: string[], q: Queryable = db) => announce(announceDeps, keyIds, q);
  const core: ServiceCore = { db, clock, announce: announceKeys, invalidate };

  return {
    db,
    clock,
    quota,
    ready: () => listening,

    async authenticate(secret, kind, aopts = {}) {
      if (closed) throw errors.stopping('The service is shutting down. Retry later.');
      checkSecretShape(secret, kind, aopts);
      if (!listened) await listening;

      const hash = hashSecret(secret);
      const now = clock.now();
      const seen = moving.seen();
      let entry: CacheEntry | undefined = kind === 'api' ? cache.get(hash) : undefined;
      let ownerId: string | null = null;
      if (!entry) {
        const gen = generation;
        const loaded = kind === 'api' ? await shared.load(hash) : await load(db, hash);
        if (!loaded || !sameHash(loaded.row.secretHash, hash)) throw errors.authentication(INVALID_MESSAGE);
        entry = { row: loaded.row, splitsUsage: loaded.splitsUsage, group: loaded.group, movesSeen: seen };
        ownerId = loaded.ownerId;
        if (kind === 'api' && gen === generation && !loaded.row.closedAt) cache.set(hash, entry);
      }
      const row = entry.row;
      refuseUnusable(row, kind, now);
      if (row.kind === 'management' && row.createdBy !== ownerId) {
        await closeFormerOwnerManagementKeys(core, row.walletId);
        throw errors.authentication('This management key closed itself: its creator is no longer the wallet owner.');
      }
      lastUsed.note(row.id, now);
      return toContext(row, entry.splitsUsage, entry.group, entry.movesSeen);
    },

    createApiKey: (walletId, copts) => createApiKey(core, walletId, copts),
    createManagementKey: (walletId, name, actor) => createManagementKey(core, walletId, name, actor),
    closeKey: (keyId, reason) => closeKey(core, keyId, reason),
    closeFormerOwnerManagementKeys: (walletId, actor) => closeFormerOwnerManagementKeys(core, walletId, actor),
    announce: announceKeys,
    moving,
    flushLastUsed: () => lastUsed.flush(),
    forget: (keyIds) => {
      for (const id of keyIds) invalidate(id);
    },
    pendingLastUsed: (keyId) => lastUsed.pending(keyId),

    async close() {
      if (closed) return;
      closed = true;
      await lastUsed.stop();
      await listening.catch(() => undefined);
      for (const stop of unlisten) await stop();
    },
  };
}
