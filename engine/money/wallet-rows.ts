// Wallet and credit-lot rows as the engine reads them, and the reads that cover many wallets at once
// (the admin listing): one page of wallets in creation order, then all their lots in one query.

import { toBigInt } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';
import type { LotBalance, Wallet, WalletBalance } from './types.ts';

export const walletFromRow = (r: Record<string, unknown>): Wallet => ({
  id: r.id as string,
  name: (r.name as string | null | undefined) ?? null,
  ownerId: r.owner_id as string,
  splitsUsage: r.splits_usage as boolean,
  keySlots: Number(r.key_slots),
  createdAt: new Date(r.created_at as string | Date),
});

export const lotFromRow = (r: Record<string, unknown>): LotBalance => ({
  id: r.id as string,
  walletId: r.wallet_id as string,
  vendors: (r.vendors as string[] | null) ?? null,
  grantedNano: toBigInt(r.granted_nano),
  availableNano: toBigInt(r.available_nano),
  reservedNano: toBigInt(r.reserved_nano),
  createdAt: new Date(r.created_at as string | Date),
  expiresAt: r.expires_at == null ? null : new Date(r.expires_at as string | Date),
  expiredNano: r.expired_nano == null ? 0n : toBigInt(r.expired_nano),
});

/**
 * Where a page of wallets starts: after this wallet in (created_at, id) order. `createdAt` is the
 * database's own text of the instant, to the microsecond, so a wallet made within the same millisecond
 * as the last one shown is neither skipped nor repeated.
 */
export interface WalletPosition {
  createdAt: string;
  id: string;
}

interface WalletPageRow {
  wallet: Wallet;
  position: WalletPosition;
}

/** Up to `limit` wallets after `after` (from the first when null), oldest first. */
export async function readWalletPage(q: Queryable, limit: number, after: WalletPosition | null): Promise<WalletPageRow[]> {
  const res = await q.query(
    `SELECT w.*, to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position_at
       FROM wallets w
      WHERE $1::timestamptz IS NULL OR (w.created_at, w.id) > ($1::timestamptz, $2::text)
      ORDER BY w.created_at, w.id
      LIMIT $3`,
    [after?.createdAt ?? null, after?.id ?? null, limit],
  );
  return res.rows.map((r) => ({ wallet: walletFromRow(r), position: { createdAt: String(r.position_at), id: String(r.id) } }));
}

/** The balances of several wallets: two queries, whatever their number. Unknown ids are left out. */
export async function readBalances(q: Queryable, walletIds: string[]): Promise<Map<string, WalletBalance>> {
  const out = new Map<string, WalletBalance>();
  if (walletIds.length === 0) return out;
  const wallets = await q.query<{ id: string; available_nano: string; reserved_nano: string }>(
    'SELECT id, available_nano, reserved_nano FROM wallets WHERE id = ANY($1::text[])',
    [walletIds],
  );
  for (const w of wallets.rows) {
    out.set(w.id, { walletId: w.id, availableNano: toBigInt(w.available_nano), reservedNano: toBigInt(w.reserved_nano), lots: [] });
  }
  const lots = await q.query('SELECT * FROM credit_lots WHERE wallet_id = ANY($1::text[]) ORDER BY seq', [walletIds]);
  for (const row of lots.rows) {
    const lot = lotFromRow(row);
    out.get(lot.walletId)?.lots.push(lot);
  }
  return out;
}
