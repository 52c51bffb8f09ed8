// SQL over api_keys and wallets, shared by the key service and the key doors. Every function takes a
// Queryable so it can run inside a transaction.

import { errors } from '../core/errors.ts';
import type { Queryable } from '../db/db.ts';
import { hashSecret, type KeyKind, newKeyId, newSecret, shownPrefix } from './secret.ts';
import { type Audience, KEY_COLUMNS, type KeyRow, keyRowFrom } from './types.ts';

export interface WalletInfo {
  id: string;
  ownerId: string;
  splitsUsage: boolean;
  keySlots: number;
}

interface NewKey {
  walletId: string;
  kind: KeyKind;
  name?: string | null;
  audience?: Audience | null;
  monthlyLimitCredits?: number | null;
  dailyLimitCredits?: number | null;
  expiresOn?: string | null;
  models?: string[] | null;
  createdBy?: string | null;
  isChatKey?: boolean;
  createRequestId?: string | null;
  groupId?: string | null;
  createdAt: Date;
}

/**
 * A key is active when it is not closed and its expiry day (Korean) has not passed: `$n` is today's
 * Korean date. Expired keys are closed by time without a write; they are neither listed nor counted.
 */
export const activeWhere = (todayParam: string) => `k.closed_at IS NULL AND (k.expires_on IS NULL OR k.expires_on >= ${todayParam}::date)`;

/** Keys the key doors see and the slots count: normal API keys that are not people's chat keys. */
export const doorKeyWhere = `k.kind = 'api' AND NOT k.is_chat_key`;

export async function getWallet(q: Queryable, walletId: string, forUpdate = false): Promise<WalletInfo | null> {
  const res = await q.query<{ id: string; owner_id: string; splits_usage: boolean; key_slots: number }>(
    `SELECT id, owner_id, splits_usage, key_slots FROM wallets WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
    [walletId],
  );
  const r = res.rows[0];
  if (!r) return null;
  return { id: r.id, ownerId: r.owner_id, splitsUsage: r.splits_usage === true, keySlots: Number(r.key_slots) };
}

/** Active keys that occupy slots (see doorKeyWhere). */
export async function countSlotKeys(q: Queryable, walletId: string, today: string): Promise<number> {
  const res = await q.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM api_keys k WHERE k.wallet_id = $1 AND ${doorKeyWhere} AND ${activeWhere('$2')}`,
    [walletId, today],
  );
  return Number(res.rows[0]?.n ?? 0);
}

export async function insertKey(q: Queryable, input: NewKey): Promise<{ row: KeyRow; key: string }> {
  const key = newSecret(input.kind);
  const res = await q.query(
    `INSERT INTO api_keys AS k (id, wallet_id, kind, secret_hash, key_prefix, name, audience, monthly_limit_credits,
        daily_limit_credits, expires_on, created_by, is_chat_key, created_at, create_request_id, models, group_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::bigint, $9::bigint, $10::date, $11, $12, $13::timestamptz, $14, $15::text[], $16)
     RETURNING ${KEY_COLUMNS}`,
    [
      newKeyId(),
      input.walletId,
      input.kind,
      hashSecret(key),
      shownPrefix(key),
      input.name ?? null,
      input.audience ?? null,
      input.monthlyLimitCredits ?? null,
      input.dailyLimitCredits ?? null,
      input.expiresOn ?? null,
      input.createdBy ?? null,
      input.isChatKey ?? false,
      input.createdAt.toISOString(),
      input.createRequestId ?? null,
      input.models && input.models.length > 0 ? input.models : null,
      input.groupId ?? null,
    ],
  );
  return { row: keyRowFrom(res.rows[0]!), key };
}

/** A key the key doors may see: this wallet's, normal, not a chat key, active. Null otherwise (404). */
export async function getDoorKey(q: Queryable, walletId: string, keyId: string, today: string, forUpdate = false): Promise<KeyRow | null> {
  const res = await q.query(
    `SELECT ${KEY_COLUMNS} FROM api_keys k
      WHERE k.id = $1 AND k.wallet_id = $2 AND ${doorKeyWhere} AND ${activeWhere('$3')}${forUpdate ? ' FOR UPDATE' : ''}`,
    [keyId, walletId, today],
  );
  return res.rows[0] ? keyRowFrom(res.rows[0]) : null;
}

export function walletMissing(walletId: string) {
  return errors.notFound(`No wallet with id ${walletId}.`);
}

/** countSlotKeys for several wallets in one query; a wallet without keys is absent (0). */
export async function countSlotKeysOf(q: Queryable, walletIds: string[], today: string): Promise<Map<string, number>> {
  if (walletIds.length === 0) return new Map();
  const res = await q.query<{ wallet_id: string; n: string }>(
    `SELECT k.wallet_id, count(*)::text AS n FROM api_keys k
      WHERE k.wallet_id = ANY($1::text[]) AND ${doorKeyWhere} AND ${activeWhere('$2')}
      GROUP BY k.wallet_id`,
    [walletIds, today],
  );
  return new Map(res.rows.map((r) => [r.wallet_id, Number(r.n)]));
}
