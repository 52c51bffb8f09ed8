// The ledger: wallets, credit lots, reservations and the journal, behind the `Ledger` interface. Why every move
// locks its rows first, and how moves are batched: docs/decisions/ledger-exactness.md.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import type { Db } from '../db/db.ts';
import { jsonTable } from '../db/json-rows.ts';
import { LedgerInvariantBroken } from './batch-run.ts';
import { type BatchSettings, createBatcher } from './batcher.ts';
import { walletMethods } from './ledger-wallets.ts';
import { sweeperMethod } from './sweep.ts';
import { ANY_VENDOR, type KnownVendors, newId } from './top-up.ts';
import type { FinishOp, FinishOutcome, InFlightFigures, Ledger, Reservation, ReserveOp, ReserveRequest } from './types.ts';

export type { KeyCap, Ledger, LotBalance, Reservation, ReserveResult, Wallet, WalletBalance } from './types.ts';

interface LedgerOptions extends BatchSettings {
  clock: Clock;
  /** Owner id written on reservations; default host:pid:random. */
  owner?: string;
  /** A hold's lifetime when the request names no expiry. */
  reservationTtlMs?: number;
  /** Plan-restricted vendors (not_in_plan); read at each use, so admission and GET /v1/models follow a reload alike. */
  planVendors?: () => readonly string[];
  /** The vendors a restricted top-up may name (config/vendors.yaml, read at each use); without it, any (ANY_VENDOR). */
  vendors?: KnownVendors;
  /** Where a move that failed on a broken invariant (LedgerInvariantBroken) is reported, at error level. */
  log?: { error: (o: object, m: string) => void };
}

const DEFAULT_RESERVATION_TTL_MS = 15 * 60 * 1000;

const resId = (r: Reservation | string) => (typeof r === 'string' ? r : r.id);

/** A bug or a corrupted row, not the caller's doing: said in the log whoever catches it. */
const brokenReporter =
  (log: LedgerOptions['log']) =>
  (e: unknown): never => {
    if (e instanceof LedgerInvariantBroken) {
      log?.error({ err: e, kind: e.kind, reservationId: e.opId, walletId: e.walletId }, 'ledger: a move failed on a broken invariant');
    }
    throw e;
  };

/**
 * A lease that ends pays its records from its hold, then from the wallet's balance: what neither covers was answered
 * and recorded but not taken, so it is said at error level (a record written past what its lease held is a bug).
 */
const unpaidRecordsReporter =
  (log: LedgerOptions['log']) =>
  (op: FinishOp, r: FinishOutcome): FinishOutcome => {
    if ((op.kind === 'release' || op.kind === 'expire') && r.shortfallNano > 0n)
      log?.error(
        { reservationId: op.id, walletId: op.walletId, shortfallNano: r.shortfallNano.toString() },
        'ledger: a lease ended owing more for its records than its hold and the wallet could pay',
      );
    return r;
  };

/**
 * The wallet a finish queues under: the Reservation's, else looked up (PostgreSQL), else null (PGlite's one queue).
 * Synchronous when it can be, so the op is queued within the call.
 */
function walletOf(r: Reservation | string, embedded: boolean, db: Db): string | null | Promise<string> {
  if (typeof r !== 'string' && typeof r.walletId === 'string') return r.walletId;
  if (embedded) return null;
  const id = resId(r);
  return db.query<{ wallet_id: string }>('SELECT wallet_id FROM reservations WHERE id = $1', [id]).then((q) => {
    const [found] = q.rows;
    if (!found) throw errors.notFound(`No reservation '${id}'.`);
    return found.wallet_id;
  });
}

/** A hold as the batcher takes it: a new reservation id, its expiry from the ledger's lifetime unless given. */
function reserveOp(req: ReserveRequest, now: Date, ttlMs: number): ReserveOp {
  const amount = req.amountNano;
  if (typeof amount !== 'bigint' || amount < 0n) throw new RangeError('amountNano must be a non-negative bigint');
  if (req.cap && !req.keyId) throw new RangeError('a key cap needs the keyId it caps');
  return {
    kind: 'reserve',
    id: newId('res'),
    walletId: req.walletId,
    vendor: req.vendor,
    amountNano: amount,
    callId: req.callId,
    keyId: req.keyId ?? null,
    createdAt: now,
    expiresAt: req.expiresAt ?? new Date(now.getTime() + ttlMs),
    cap: req.cap,
  };
}

// The two writes to a held reservation's row that move no money (no lot, no journal row), so not a batch's.
async function extendHolds(db: Db, ids: readonly string[], expiresAt: Date): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const r = await db.query<{ id: string }>(
    `UPDATE reservations SET expires_at = $2::timestamptz WHERE id = ANY($1::text[]) AND state = 'held' RETURNING id`,
    [ids, expiresAt.toISOString()],
  );
  return new Set(r.rows.map((row) => row.id));
}

/** Marks held reservations as owed by charges kept on disk (migration 028, kept-holds.ts), or unmarks them. */
async function keepHolds(db: Db, ids: readonly string[], kept: boolean): Promise<void> {
  if (ids.length === 0) return;
  const set = kept ? 'kept_at = coalesce(kept_at, now())' : 'kept_at = NULL';
  await db.query(`UPDATE reservations SET ${set} WHERE id = ANY($1::text[]) AND state = 'held'`, [ids]);
}

/** A lease's figures per key as the column keeps them: `{"<key id>": "<nano>"}`, null when none. */
const byKeyObject = (byKey: InFlightFigures['byKey']): Record<string, string> | null =>
  byKey && byKey.size > 0 ? Object.fromEntries([...byKey].map(([k, n]) => [k, n.toString()])) : null;

const IN_FLIGHT = jsonTable('id text, n bigint, k jsonb');

async function noteInFlight(db: Db, leases: readonly InFlightFigures[]): Promise<void> {
  if (leases.length === 0) return;
  await db.query(
    `UPDATE reservations r SET in_flight_nano = v.n, in_flight_by_key = v.k
       FROM ${IN_FLIGHT.from('$1', 'v')}
      WHERE r.id = v.id AND r.state = 'held'`,
    [IN_FLIGHT.json(leases.map((l) => [l.reservationId, l.inFlightNano, byKeyObject(l.byKey)]))],
  );
}

export function createLedger(db: Db, opts: LedgerOptions): Ledger {
  const clock = opts.clock;
  const owner = opts.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const ttl = opts.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
  const planVendors = opts.planVendors ?? (() => []);
  const vendors = opts.vendors ?? ANY_VENDOR;

  const batcher = createBatcher({ ...opts, db, clock, owner, planVendors });

  const reportBroken = brokenReporter(opts.log);
  const reportUnpaid = unpaidRecordsReporter(opts.log);
  const finishOp = (op: FinishOp) => batcher.finish(op).then((r) => reportUnpaid(op, r));

  const finish = (reservation: Reservation | string, op: Omit<FinishOp, 'walletId' | 'id'>): Promise<FinishOutcome> => {
    const id = resId(reservation);
    const walletId = walletOf(reservation, batcher.embedded, db);
    if (walletId instanceof Promise) return walletId.then((w) => finishOp({ ...op, id, walletId: w }).catch(reportBroken));
    return finishOp({ ...op, id, walletId }).catch(reportBroken);
  };

  return {
    owner,

    ...walletMethods(db, clock, vendors, planVendors),

    async reserve(req) {
      return batcher.reserve(reserveOp(req, clock.now(), ttl)).catch(reportBroken);
    },

    async settle(reservation, actualNano, rows) {
      if (typeof actualNano !== 'bigint') throw new TypeError('actualNano must be a bigint');
      const r = await finish(reservation, { kind: 'settle', actualNano, rows });
      return { chargedNano: r.chargedNano, shortfallNano: r.shortfallNano, alreadyFinished: r.alreadyFinished };
    },

    async draw(reservation, amountNano, drawId, rows, opts) {
      if (typeof amountNano !== 'bigint') throw new TypeError('amountNano must be a bigint');
      const r = await finish(reservation, {
        kind: 'draw',
        actualNano: amountNano,
        drawId,
        drawnAt: clock.now(),
        rows,
        holdAtMostNano: opts?.holdAtMostNano,
        firstTry: opts?.firstTry,
      });
      return { chargedNano: r.chargedNano, shortfallNano: r.shortfallNano, alreadyFinished: r.alreadyFinished };
    },

    async trim(reservation, releaseNano) {
      if (typeof releaseNano !== 'bigint') throw new TypeError('releaseNano must be a bigint');
      const r = await finish(reservation, { kind: 'trim', actualNano: 0n, releaseNano });
      return { releasedNano: r.releasedNano };
    },

    async release(reservation) {
      const r = await finish(reservation, { kind: 'release', actualNano: 0n });
      return { releasedNano: r.releasedNano, alreadyFinished: r.alreadyFinished };
    },

    extendAll: (ids, expiresAt) => extendHolds(db, ids, expiresAt),
    keepHeld: (ids, kept) => keepHolds(db, ids, kept),
    noteInFlight: (leases) => noteInFlight(db, leases),

    sweepExpired: sweeperMethod(db, finishOp, clock, opts.log),
  };
}
