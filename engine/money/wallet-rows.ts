// Wallet and credit-lot rows as the engine reads them; a wallet's balance is the sum of its lots.

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
  label: (r.label as string | null | undefined) ?? null,
});

/** Two queries whatever the number of wallets; unknown ids are left out. */
export async function readBalances(q: Queryable, walletIds: string[]): Promise<Map<string, WalletBalance>> {
  const out = new Map<string, WalletBalance>();
  if (walletIds.length === 0) return out;
  const wallets = await q.query<{ id: string }>('SELECT id FROM wallets WHERE id = ANY($1::text[])', [walletIds]);
  for (const w of wallets.rows) out.set(w.id, { walletId: w.id, availableNano: 0n, reservedNano: 0n, lots: [] });
  const lots = await q.query('SELECT * FROM credit_lots WHERE wallet_id = ANY($1::text[]) ORDER BY seq', [walletIds]);
  for (const row of lots.rows) {
    const lot = lotFromRow(row);
    const balance = out.get(lot.walletId);
    if (!balance) continue;
    balance.lots.push(lot);
    balance.availableNano += lot.availableNano;
    balance.reservedNano += lot.reservedNano;
  }
  return out;
}
