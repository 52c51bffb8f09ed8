// The expiry pass: an expired lot's remainder leaves the balance for good, in one transaction per lot that locks
// it first, so a second process finds nothing left (docs/money.md, "Lots that expire").

import { type Actor, recordAudit } from '../audit/trail.ts';
import type { Clock } from '../core/clock.ts';
import { nanoToCreditsFloor, toBigInt } from '../core/money.ts';
import type { Db, Queryable, Transaction } from '../db/db.ts';
import { type LotRow, lotStateOf, writeMoves } from './batch-sql.ts';
import { IN_FLIGHT_TELL_MS } from './in-flight.ts';
import { assertMoney } from './invariants.ts';
import { lotExpired } from './lot-order.ts';
import { type LotState, Moves } from './moves.ts';
import { withRetry } from './retry.ts';
import { onePassAtATime } from './sweep.ts';
import { LEASE_CALL_PREFIX } from './types.ts';

/** The gateway itself, as the audit trail names it for an expiry: no one asked for it. */
const EXPIRY_ACTOR: Actor = { kind: 'system', id: 'expiry', ip: null, userAgent: null };

const PAGE = 100;
/** Pages one pass expires at most (10,000 lots); what is left waits for the next pass. */
const MAX_PAGES = 100;

// Lots past expiry with money available (partial index credit_lots_expiry), and lots a held lease holds on
// (held reservations are few: calls in flight and leases).
const DUE_SQL = `
SELECT id, expires_at FROM credit_lots
 WHERE expires_at IS NOT NULL AND available_nano > 0 AND expires_at <= $1::timestamptz AND NOT (id = ANY($2::text[]))
UNION
SELECT l.id, l.expires_at FROM reservations r
  JOIN reservation_lots rl ON rl.reservation_id = r.id AND rl.amount_nano > 0
  JOIN credit_lots l ON l.id = rl.lot_id
 WHERE r.state = 'held' AND r.call_id LIKE $3 AND l.expires_at <= $1::timestamptz AND NOT (l.id = ANY($2::text[]))
 ORDER BY expires_at, id LIMIT ${PAGE}`;

const LOCK_LOT_SQL = `
SELECT id, wallet_id, seq::text AS seq, vendors, available_nano::text AS available_nano, reserved_nano::text AS reserved_nano, expires_at
  FROM credit_lots WHERE id = $1 FOR UPDATE`;

// The leases holding on the lot, locked in id order after the lot, with what their calls in flight hold as their
// processes last said (all of it for a lease that charges kept on disk owe: kept-holds.ts); what they hold on it is
// read by the next statement, once they are locked (a row only joined here keeps the snapshot taken before a lock wait).
const LOCK_LEASES_SQL = `
SELECT r.id, r.amount_nano::text AS amount_nano, coalesce(r.charged_nano, 0)::text AS charged_nano,
       (CASE WHEN r.kept_at IS NULL THEN r.in_flight_nano ELSE r.amount_nano END)::text AS in_flight_nano
  FROM reservations r
 WHERE r.state = 'held' AND r.call_id LIKE $2
   AND EXISTS (SELECT 1 FROM reservation_lots rl WHERE rl.reservation_id = r.id AND rl.lot_id = $1 AND rl.amount_nano > 0)
 ORDER BY r.id FOR UPDATE`;

/** What one lot's expiry moved; null when there was nothing to move (done already, or not expired). */
interface LotExpiry {
  walletId: string;
  lotId: string;
  expiredNano: bigint;
  /** Of it, what leases held on the lot for no call and gave back first. */
  voidedNano: bigint;
}

async function expireLotIn(tx: Transaction, owner: string, lotId: string, at: Date): Promise<LotExpiry | null> {
  const row = (await tx.query<LotRow>(LOCK_LOT_SQL, [lotId])).rows[0];
  if (!row) return null;
  const lot = lotStateOf(row);
  if (!lotExpired(lot, at)) return null;
  const moves = new Moves();
  const voidedNano = await voidLeases(tx, lot, moves, at);
  const expiredNano = lot.avail;
  moves.move(lot, null, 'expire', expiredNano, at);
  if (moves.empty) return null;
  // What leaves is all the lot had for no call; what calls still hold on it stays reserved for them.
  assertMoney(lot.avail === 0n && expiredNano >= voidedNano, () => `ledger: expiry of lot ${lotId} left ${lot.avail} available`);
  await writeMoves(tx, owner, moves);
  await tx.query('UPDATE credit_lots SET expired_nano = expired_nano + $2::bigint WHERE id = $1', [lotId, expiredNano.toString()]);
  const after = { expired_credits: Number(nanoToCreditsFloor(expiredNano)), expires_at: lot.expiresAt!.toISOString() };
  await recordAudit(tx, EXPIRY_ACTOR, { walletId: lot.walletId, action: 'credits.expired', targetId: lotId, before: null, after }, at);
  return { walletId: lot.walletId, lotId, expiredNano, voidedNano };
}

/**
 * Gives back to the lot what each lease holding on it holds there beyond what its calls in flight hold and its
 * records owe (they were admitted before the expiry, so the term's money pays for them, as for a call's own hold);
 * the leases stay held with the rest, and what they keep here comes back to the lot when they end, for the next
 * pass. Returns the sum given back.
 */
async function voidLeases(tx: Queryable, lot: LotState, moves: Moves, at: Date): Promise<bigint> {
  type LeaseRow = { id: string; amount_nano: string; charged_nano: string; in_flight_nano: string };
  const leases = (await tx.query<LeaseRow>(LOCK_LEASES_SQL, [lot.id, `${LEASE_CALL_PREFIX}%`])).rows;
  if (leases.length === 0) return 0n;
  const holds = await tx.query<{ reservation_id: string; amount_nano: string; owed: string }>(
    `SELECT rl.reservation_id, rl.amount_nano::text AS amount_nano,
            (SELECT coalesce(sum(u.charged_nano), 0) FROM usage_records u WHERE u.lease_id = rl.reservation_id)::text AS owed
       FROM reservation_lots rl WHERE rl.lot_id = $1 AND rl.reservation_id = ANY($2::text[])`,
    [lot.id, leases.map((l) => l.id)],
  );
  const held = new Map(holds.rows.map((h) => [h.reservation_id, h]));
  let voided = 0n;
  for (const lease of leases) {
    const row = held.get(lease.id);
    const h = row ? toBigInt(row.amount_nano) : 0n;
    // What its calls hold and its records owe stays: the lease pays them from its hold when it ends.
    const kept = toBigInt(lease.in_flight_nano) + (row ? toBigInt(row.owed) : 0n);
    const given = h > kept ? h - kept : 0n;
    if (given <= 0n) continue;
    const amount = toBigInt(lease.amount_nano) - given;
    // A lease holds at least what its lots hold for it (the audit's hold_lots): less is a broken row, not ours to move.
    assertMoney(amount >= h - given, () => `ledger: lease ${lease.id} holds ${lease.amount_nano}, less than its ${h} on lot ${lot.id}`);
    moves.move(lot, lease.id, 'release', given, at);
    moves.heldDelta.push({ reservationId: lease.id, lotId: lot.id, amount: given });
    moves.finished.set(lease.id, { state: 'held', charged: toBigInt(lease.charged_nano), at: null, amount });
    voided += given;
  }
  return voided;
}

type Report = (err: unknown, lotId: string) => void;

/** One pass: expires every lot due at `at` (bounded); returns the expiries. A lot that fails is reported and skipped. */
export async function expireDueLots(db: Db, owner: string, at: Date, report: Report): Promise<LotExpiry[]> {
  const failed: string[] = [];
  const done: LotExpiry[] = [];
  for (let page = 0; page < MAX_PAGES; page++) {
    const due = await db.query<{ id: string }>(DUE_SQL, [at.toISOString(), failed, `${LEASE_CALL_PREFIX}%`]);
    let progressed = false;
    for (const { id } of due.rows) {
      try {
        const e = await withRetry(() => db.transaction((tx) => expireLotIn(tx, owner, id, at)));
        if (e) done.push(e);
        progressed ||= e !== null;
      } catch (err) {
        failed.push(id);
        progressed = true;
        report(err, id);
      }
    }
    // Nothing moved: what is left was expired by another process meanwhile (the next pass sees anything new).
    if (!progressed || due.rows.length < PAGE) return done;
  }
  return done;
}

interface LotExpiryTimer {
  db: Db;
  owner: string;
  clock: Clock;
  intervalMs: number;
  report: Report;
  /** Told of each expiry this process moved (the alerts check the wallet's balance thresholds again). */
  expired: (e: LotExpiry) => void;
}

/**
 * How long past a lot's expiry the timer's pass leaves it: a lease admits calls until the expiry, and tells what they
 * hold a few times a second (in-flight.ts). Waiting for that, the pass keeps on the lot what the last of them hold.
 */
export const TOLD_AFTER_MS = 8 * IN_FLIGHT_TELL_MS;

/** Runs expireDueLots every `intervalMs` on `clock`'s time, for lots expired `TOLD_AFTER_MS` ago (one pass at a time); returns stop(). */
export const startLotExpiry = (opts: LotExpiryTimer): (() => void) =>
  onePassAtATime(opts.intervalMs, () =>
    expireDueLots(opts.db, opts.owner, new Date(opts.clock.now().getTime() - TOLD_AFTER_MS), opts.report).then(
      (done) => {
        for (const e of done) opts.expired(e);
      },
      (e: unknown) => opts.report(e, '*'),
    ),
  );
