// What a wallet can spend, as its owner and operator see it: money a process holds as a budget lease
// (engine/money/leases.ts) is still the wallet's to spend, so the views count a lease's unspent hold as
// available, not as reserved. The journal and `Ledger.balance` keep the raw columns.
import type { Queryable } from '../db/db.ts';
import { nanoToCreditsFloor, toBigInt } from '../core/money.ts';
import { LEASE_CALL_PREFIX, type Ledger, type WalletBalance } from './types.ts';

/** Per wallet, per lot: what held leases hold on it. */
export async function readLeasedByLot(db: Queryable, walletIds: readonly string[]): Promise<Map<string, bigint>> {
  if (walletIds.length === 0) return new Map();
  const r = await db.query<{ lot_id: string; held: string }>(
    `SELECT rl.lot_id, sum(rl.amount_nano)::text AS held
       FROM reservations r JOIN reservation_lots rl ON rl.reservation_id = r.id
      WHERE r.wallet_id = ANY($1::text[]) AND r.state = 'held' AND r.call_id LIKE $2
      GROUP BY rl.lot_id`,
    [walletIds, `${LEASE_CALL_PREFIX}%`],
  );
  return new Map(r.rows.map((row) => [row.lot_id, toBigInt(row.held)]));
}

/** The balance with every lease's hold counted as available again. */
export function spendableBalance(bal: WalletBalance, leasedByLot: ReadonlyMap<string, bigint>): WalletBalance {
  let moved = 0n;
  const lots = bal.lots.map((l) => {
    const leased = leasedByLot.get(l.id) ?? 0n;
    moved += leased;
    return leased === 0n ? l : { ...l, availableNano: l.availableNano + leased, reservedNano: l.reservedNano - leased };
  });
  return { ...bal, availableNano: bal.availableNano + moved, reservedNano: bal.reservedNano - moved, lots };
}

/** GET /v1/credits: what the whole wallet can still spend, in credits (rounded down). */
export async function creditsOf(db: Queryable, ledger: Ledger, walletId: string) {
  // Both reads at once: on PostgreSQL two connections, so the answer waits one round trip.
  const [balance, leased] = await Promise.all([ledger.balance(walletId), readLeasedByLot(db, [walletId])]);
  const b = spendableBalance(balance, leased);
  return {
    object: 'credits',
    wallet_id: walletId,
    credits: Number(nanoToCreditsFloor(b.availableNano)),
    reserved_credits: Number(nanoToCreditsFloor(b.reservedNano)),
    lots: b.lots
      .filter((l) => l.availableNano > 0n)
      .map((l) => ({ id: l.id, vendors: l.vendors, credits: Number(nanoToCreditsFloor(l.availableNano)) })),
  };
}
