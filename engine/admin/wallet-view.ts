// The one answer that shows a wallet: GET /admin/v1/wallets/{id}, each item of GET /admin/v1/wallets and
// `gateway wallet show|list`. Credits shown: balances round down, reserved and spent amounts round up. The
// `*_money` fields say the same amounts as billing.yaml's display currency and dollars ("₩70,000 · $50.00").

import { type DisplayCurrency, moneyText, nanoToCreditsCeil, nanoToCreditsFloor } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import { countSlotKeys } from '../keys/store.ts';
import type { LotBalance, Wallet, WalletBalance } from '../money/ledger.ts';
import { spendableOf } from '../money/spendable.ts';
import { readWalletUse, type WalletUse } from './wallet-overview.ts';

const lotView = (l: LotBalance) => ({
  id: l.id,
  label: l.label,
  vendors: l.vendors,
  credits: Number(nanoToCreditsFloor(l.availableNano)),
  reserved_credits: Number(nanoToCreditsCeil(l.reservedNano)),
  granted_credits: Number(nanoToCreditsFloor(l.grantedNano)),
  created_at: l.createdAt.toISOString(),
  expires_at: l.expiresAt?.toISOString() ?? null,
  expired_credits: Number(nanoToCreditsFloor(l.expiredNano)),
});

/** The answer to a top-up (POST /admin/v1/wallets/{id}/credits, `gateway wallet topup`): the lot it made. */
export const lotAdded = (lot: LotBalance, currency: DisplayCurrency | null) => ({
  lot_id: lot.id,
  label: lot.label,
  credits: Number(nanoToCreditsFloor(lot.grantedNano)),
  money: moneyText(lot.grantedNano, currency, 'down'), // given rounded up to the credit: down reads it as typed
  vendors: lot.vendors,
  expires_at: lot.expiresAt?.toISOString() ?? null,
});

interface RestrictedCredits {
  vendors: string[];
  credits: number;
}

/**
 * What the wallet can spend on any model (`general_credits`) apart from what only some vendors' models
 * can use, one entry per set of vendors, in the order the sets sort. Each sum rounds down on its own, so
 * the parts may add up to a credit or so less than `credits`, the rounded-down total.
 */
function creditsBySpendability(lots: LotBalance[]): { general_credits: number; restricted_credits: RestrictedCredits[] } {
  let generalNano = 0n;
  const restricted = new Map<string, { vendors: string[]; nano: bigint }>();
  for (const lot of lots) {
    if (lot.vendors === null) {
      generalNano += lot.availableNano;
      continue;
    }
    const vendors = [...lot.vendors].sort();
    const key = vendors.join(',');
    const entry = restricted.get(key) ?? { vendors, nano: 0n };
    entry.nano += lot.availableNano;
    restricted.set(key, entry);
  }
  return {
    general_credits: Number(nanoToCreditsFloor(generalNano)),
    restricted_credits: [...restricted.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, e]) => ({ vendors: e.vendors, credits: Number(nanoToCreditsFloor(e.nano)) })),
  };
}

/** The view from what was read; `keysActive` as countActiveKeysIn counts them. */
export function walletViewFrom(w: Wallet, bal: WalletBalance, keysActive: number, use: WalletUse, currency: DisplayCurrency | null) {
  return {
    id: w.id,
    name: w.name,
    credits: Number(nanoToCreditsFloor(bal.availableNano)),
    money: moneyText(bal.availableNano, currency, 'down'),
    ...creditsBySpendability(bal.lots),
    reserved_credits: Number(nanoToCreditsCeil(bal.reservedNano)),
    lots: bal.lots.map(lotView),
    key_slots: w.keySlots,
    keys_active: keysActive,
    splits_usage: w.splitsUsage,
    owner_id: w.ownerId,
    created_at: w.createdAt.toISOString(),
    month_spent_credits: Number(nanoToCreditsCeil(use.monthSpentNano)),
    month_spent_money: moneyText(use.monthSpentNano, currency, 'up'),
    last_call_at: use.lastCallAt,
  };
}

export type WalletView = ReturnType<typeof walletViewFrom>;

/** GET /admin/v1/wallets/{id} and `gateway wallet show`: one answer for both. */
export async function walletView(
  db: Db,
  w: Wallet,
  countActiveKeys: (walletId: string) => Promise<number>,
  at: { today: string; currency: DisplayCurrency | null; now?: Date },
): Promise<WalletView> {
  const [bal, keysActive, use] = await Promise.all([
    spendableOf(db, w.id, at.now),
    countActiveKeys(w.id),
    readWalletUse(db, [w.id], at.today),
  ]);
  return walletViewFrom(w, bal, keysActive, use.get(w.id)!, at.currency);
}

/**
 * Active API keys of a wallet, as its key slots count them (the key store's one definition of an active
 * key); `today` is the Korean date.
 */
export const countActiveKeysIn: (db: Db, walletId: string, today: string) => Promise<number> = countSlotKeys;
