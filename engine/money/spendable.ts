// What a wallet can spend and what calls in flight hold, as every view shows it: of a lease, only what its calls
// hold is held and the rest counts as available, so views tell the truth (docs/money.md, "Every view tells the truth").
import { errors } from '../core/errors.ts';
import { toBigInt } from '../core/money.ts';
import type { Db, Queryable } from '../db/db.ts';
import { readBalance } from './ledger-wallets.ts';
import { lotExpired } from './lot-order.ts';
import { LEASE_CALL_PREFIX, type WalletBalance } from './types.ts';
import { readBalances } from './wallet-rows.ts';

/** Of what held leases hold on a lot: for no call (it counts as available), and owed by their records (spent). */
interface LeasedOnLot {
  unheld: bigint;
  owed: bigint;
}

/**
 * Per lot: what held leases hold on it for no call and what their records owe (lease-records.ts), a lease's records
 * then its calls counted against its lots in draw order (lot-order.ts). A lease owed by charges kept on disk is held
 * whole: its process may be gone, and no call can spend it.
 */
export async function readLeasedByLot(db: Queryable, walletIds: readonly string[]): Promise<Map<string, LeasedOnLot>> {
  if (walletIds.length === 0) return new Map();
  const r = await db.query<{ reservation_id: string; lot_id: string; held: string; in_flight: string; owed: string }>(
    `SELECT r.id AS reservation_id, rl.lot_id, rl.amount_nano::text AS held,
            (CASE WHEN r.kept_at IS NULL THEN r.in_flight_nano ELSE r.amount_nano END)::text AS in_flight,
            (SELECT coalesce(sum(u.charged_nano), 0) FROM usage_records u WHERE u.lease_id = r.id)::text AS owed
       FROM reservations r
       JOIN reservation_lots rl ON rl.reservation_id = r.id
       JOIN credit_lots l ON l.id = rl.lot_id
      WHERE r.wallet_id = ANY($1::text[]) AND r.state = 'held' AND r.call_id LIKE $2 AND rl.amount_nano > 0
      ORDER BY r.id, l.expires_at NULLS LAST, (l.vendors IS NULL), l.seq`,
    [walletIds, `${LEASE_CALL_PREFIX}%`],
  );
  const byLot = new Map<string, LeasedOnLot>();
  const left = new Map<string, { owed: bigint; calls: bigint }>();
  for (const row of r.rows) {
    const held = toBigInt(row.held);
    const lease = left.get(row.reservation_id) ?? { owed: toBigInt(row.owed), calls: toBigInt(row.in_flight) };
    left.set(row.reservation_id, lease);
    const owed = lease.owed < held ? lease.owed : held;
    const ofCalls = lease.calls < held - owed ? lease.calls : held - owed;
    lease.owed -= owed;
    lease.calls -= ofCalls;
    const lot = byLot.get(row.lot_id) ?? { unheld: 0n, owed: 0n };
    byLot.set(row.lot_id, { unheld: lot.unheld + held - owed - ofCalls, owed: lot.owed + owed });
  }
  return byLot;
}

/**
 * The balance with what leases hold for no call counted as available, and without what lots expired at `now` still
 * have, moved out or not (docs/money.md, "Lots that expire"); what calls hold on such a lot stays held.
 */
function spendableBalance(bal: WalletBalance, leasedByLot: ReadonlyMap<string, LeasedOnLot>, now: Date = new Date()): WalletBalance {
  let moved = 0n;
  let lapsed = 0n;
  let gone = 0n; // what leases hold on lots for no one: on expired lots for no call (voided by the expiry pass), and spent by records
  const lots = bal.lots.map((l) => {
    const { unheld, owed } = leasedByLot.get(l.id) ?? { unheld: 0n, owed: 0n };
    gone += owed;
    if (lotExpired(l, now)) {
      lapsed += l.availableNano;
      gone += unheld;
      return { ...l, availableNano: 0n, reservedNano: l.reservedNano - unheld - owed };
    }
    moved += unheld;
    return unheld + owed === 0n ? l : { ...l, availableNano: l.availableNano + unheld, reservedNano: l.reservedNano - unheld - owed };
  });
  return { ...bal, availableNano: bal.availableNano + moved - lapsed, reservedNano: bal.reservedNano - moved - gone, lots };
}

/**
 * The wallets as every view shows them, by id (unknown ids left out). The lots and the leases are read in one
 * snapshot: read apart, a lease granted or given back between the two reads was counted twice or not at all.
 */
export async function spendablesOf(db: Db, walletIds: readonly string[], now?: Date): Promise<Map<string, WalletBalance>> {
  const ids = [...walletIds];
  const [balances, leased] = await db.transaction(async (tx) => [await readBalances(tx, ids), await readLeasedByLot(tx, ids)] as const, {
    snapshot: true,
  });
  return new Map([...balances].map(([id, b]) => [id, spendableBalance(b, leased, now)]));
}

/** One wallet as every view shows it. Throws errors.notFound when it does not exist. */
export async function spendableOf(db: Db, walletId: string, now?: Date): Promise<WalletBalance> {
  const balance = (await spendablesOf(db, [walletId], now)).get(walletId);
  if (!balance) throw errors.notFound(`No wallet '${walletId}'.`);
  return balance;
}

/** The wallet's whole balance (what it can spend and what calls hold) as the views count it, read with `q`. */
export async function spendableTotalIn(q: Queryable, walletId: string, now: Date): Promise<bigint> {
  const b = spendableBalance(await readBalance(q, walletId), await readLeasedByLot(q, [walletId]), now);
  return b.availableNano + b.reservedNano;
}
