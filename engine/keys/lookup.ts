// Looking a key up for authentication: the row with its wallet and group, read once per secret hash (concurrent
// lookups share it), and the refusals (401) a key's text or row gives, each saying what to send instead.

import { endOfKoreanDay } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { NANO_PER_CREDIT } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import { type KeyKind, kindOfSecret } from './secret.ts';
import { type AuthContext, KEY_COLUMNS, type KeyGroupContext, type KeyRow, keyRowFrom } from './types.ts';

export interface AuthenticateOptions {
  /** The door also takes `x-api-key` (the messages door): the 401 guidance names both headers. */
  allowXApiKey?: boolean;
}

export interface CacheEntry {
  row: KeyRow;
  splitsUsage: boolean;
  group: KeyGroupContext | null;
  /** This process's count of key moves when the row was about to be read (moving-keys.ts). */
  movesSeen?: number;
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

export const INVALID_MESSAGE = 'Invalid API key: no key matches it. Check the key, or create a new one.';

const limitNano = (credits: unknown): bigint | null => (credits == null ? null : BigInt(String(credits)) * NANO_PER_CREDIT);

/** The key's group as the key's lookup joined it (a deleted group is none). */
function groupFrom(r: Record<string, unknown>): KeyGroupContext | null {
  if (r.g_id == null) return null;
  return { id: String(r.g_id), name: String(r.g_name), monthlyLimitNano: limitNano(r.g_monthly), dailyLimitNano: limitNano(r.g_daily) };
}

export function toContext(row: KeyRow, splitsUsage: boolean, group: KeyGroupContext | null, movesSeen?: number): AuthContext {
  const context: AuthContext = {
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
  // Set only when known, without an object spread on every call's authentication.
  if (movesSeen !== undefined) context.movesSeen = movesSeen;
  return context;
}

/** 401 for a missing key, text that is no key, or a key of the other kind than the door takes. */
export function checkSecretShape(secret: string | undefined, kind: KeyKind, aopts: AuthenticateOptions): asserts secret is string {
  if (secret === undefined || secret === '') throw errors.authentication(missingMessage(kind, aopts));
  const claimed = kindOfSecret(secret);
  if (claimed === null) throw errors.authentication(INVALID_MESSAGE);
  if (claimed !== kind) throw errors.authentication(wrongKindMessage(kind));
}

/** 401 for a key of the other kind, a closed key or an expired one. */
export function refuseUnusable(row: KeyRow, kind: KeyKind, now: Date): void {
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
}

/** The key with this secret hash, its wallet's owner and usage split, and its group. */
export async function load(db: Db, hash: string): Promise<(CacheEntry & { ownerId: string }) | null> {
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

type Loaded = ReturnType<typeof load>;

/**
 * Concurrent lookups of one uncached API key (a client's burst right after it starts, or after the cache entry
 * expired) share one query instead of taking a pooled connection each, unless an invalidation came between
 * them (`generation()` moved on): a lookup begun after one reads the key again.
 */
export class SharedLoader {
  private readonly loading = new Map<string, { gen: number; loaded: Loaded }>();
  constructor(
    private readonly db: Db,
    private readonly generation: () => number,
  ) {}

  load(hash: string): Loaded {
    const current = this.loading.get(hash);
    if (current && current.gen === this.generation()) return current.loaded;
    const loaded = load(this.db, hash).finally(() => {
      if (this.loading.get(hash)?.loaded === loaded) this.loading.delete(hash);
    });
    this.loading.set(hash, { gen: this.generation(), loaded });
    return loaded;
  }
}
