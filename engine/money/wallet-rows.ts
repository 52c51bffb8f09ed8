// Wallet and credit-lot rows as the engine reads them, and the balances of many wallets at once (the admin
// listing): their wallet rows, then all their lots, in two queries.

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
