// Shapes shared by the key store, the key doors and the quota checks.
import { nanoToCreditsCeil } from '../core/money.ts';
import type { KeyKind } from './secret.ts';

export type Audience = 'student' | 'teacher';

/** Who is calling: the result of authenticating a key. Plain data; safe to pass along a call. */
export interface AuthContext {
  keyId: string;
  walletId: string;
  kind: KeyKind;
  /** Effective audience: null when the wallet does not split usage (whatever the key row says). */
  audience: Audience | null;
  /** `sk-svc-Ab3dE…`: never the full key. */
  keyPrefix: string;
  /** Monthly key limit in nano-USD (credits × 1000), or null for none. */
  monthlyLimitNano: bigint | null;
  /** Daily key limit in nano-USD (credits × 1000), or null for none. */
  dailyLimitNano: bigint | null;
  splitsUsage: boolean;
  /** Last Korean day the key works (YYYY-MM-DD), or null. */
  expiresOn: string | null;
  /** 00:00 KST the day after expiresOn: the instant the key stops working; null when no expiry. */
  expiresAt: Date | null;
  /** The model ids and `prefix*` patterns the key may call; null: every model the wallet's credits allow. */
  models: readonly string[] | null;
  /** The key's group (a class), with its limits in nano-USD; null when the key is in none. */
  group: KeyGroupContext | null;
  /** This process's count of key moves when the key was read: a call of a key moved since is not admitted. */
  movesSeen?: number;
}

export interface KeyGroupContext {
  id: string;
  name: string;
  monthlyLimitNano: bigint | null;
  dailyLimitNano: bigint | null;
}

/** One row of api_keys as the engine reads it (bigints and dates already converted). */
export interface KeyRow {
  id: string;
  walletId: string;
  kind: KeyKind;
  secretHash: string;
  keyPrefix: string;
  name: string | null;
  audience: Audience | null;
  monthlyLimitCredits: number | null;
  dailyLimitCredits: number | null;
  expiresOn: string | null;
  /** Model ids and `prefix*` patterns the key may call; null when it may call every model. */
  models: string[] | null;
  createdBy: string | null;
  /** The key's group (key_groups), or null. */
  groupId: string | null;
  isChatKey: boolean;
  createdAt: Date;
  lastUsedAt: Date | null;
  closedAt: Date | null;
}

/** SELECT list producing a KeyRow-able record; the table alias must be `k`. */
export const KEY_COLUMNS = `k.id, k.wallet_id, k.kind, k.secret_hash, k.key_prefix, k.name, k.audience,
  k.monthly_limit_credits::text AS monthly_limit_credits, k.daily_limit_credits::text AS daily_limit_credits,
  to_char(k.expires_on, 'YYYY-MM-DD') AS expires_on, k.created_by, k.is_chat_key, k.created_at, k.last_used_at,
  k.closed_at, to_jsonb(k.models) AS models, k.group_id`;

type Raw = Record<string, unknown>;

const toDate = (v: unknown): Date | null => (v == null ? null : v instanceof Date ? v : new Date(String(v)));
const toNum = (v: unknown): number | null => (v == null ? null : Number(v));

export function keyRowFrom(r: Raw): KeyRow {
  return {
    id: String(r.id),
    walletId: String(r.wallet_id),
    kind: r.kind === 'management' ? 'management' : 'api',
    secretHash: String(r.secret_hash),
    keyPrefix: String(r.key_prefix),
    name: r.name == null ? null : String(r.name),
    audience: r.audience === 'student' || r.audience === 'teacher' ? r.audience : null,
    monthlyLimitCredits: toNum(r.monthly_limit_credits),
    dailyLimitCredits: toNum(r.daily_limit_credits),
    expiresOn: r.expires_on == null ? null : String(r.expires_on),
    models: modelsFrom(r.models),
    createdBy: r.created_by == null ? null : String(r.created_by),
    groupId: r.group_id == null ? null : String(r.group_id),
    isChatKey: r.is_chat_key === true || r.is_chat_key === 't',
    createdAt: toDate(r.created_at) ?? new Date(0),
    lastUsedAt: toDate(r.last_used_at),
    closedAt: toDate(r.closed_at),
  };
}

/** The models column as read (jsonb array; PGlite may hand it over as text): an empty list is no list. */
function modelsFrom(v: unknown): string[] | null {
  const list = typeof v === 'string' ? (JSON.parse(v) as unknown) : v;
  return Array.isArray(list) && list.length > 0 ? list.map(String) : null;
}

/** Credits shown for a used amount: usage rounds up, and nothing used shows as 0 (never negative). */
export const usedCredits = (nano: bigint): number => Number(nano <= 0n ? 0n : nanoToCreditsCeil(nano));

/** A monthly refusal's hint, given only while the month has room left: then a call asking for less may fit. */
export const askLessHint = (limitNano: bigint, usedNano: bigint, heldNano: bigint): string =>
  limitNano > usedNano + heldNano ? 'Asking for less (a lower output limit, fewer images or seconds) lowers what the call may use. ' : '';
