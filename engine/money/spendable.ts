// What a wallet can spend, as its owner and operator see it: money a process holds as a budget lease
// (engine/money/leases.ts) is still the wallet's to spend, so the views count a lease's unspent hold as
// available, not as reserved. The journal and `Ledger.balance` keep the raw columns.
import type { Queryable } from '../db/db.ts';
import { toBigInt } from '../core/money.ts';
import { LEASE_CALL_PREFIX, type WalletBalance } from './types.ts';

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
