// The ledger: wallets, credit lots, reservations and the append-only journal (schema in
// engine/db/migrations/001_ledger.sql). Money is integer nano-USD (bigint).
//
// Exactness. Every money move runs in a transaction that first locks the rows it touches
// (`SELECT … FOR UPDATE`, in one statement: the wallet's live lot rows always in `seq` order, then the
// reservation rows in id order; every mover locks in that order, so movers do not deadlock each other),
// reads what the locked reservations hold per lot in a statement after that (a row only joined to a locked
// one is not re-read after a lock wait: batch-sql.ts), decides the split in memory from those current
// values, then writes lots, wallet totals,
// reservation and journal rows (writable CTEs over parameter arrays). Concurrent movers queue on the lot
// rows; none can read a stale balance, so the wallet never overspends. CHECK (… >= 0) constraints are the
// safety net. Deadlock/serialization failures retry.
//
// Batching (batcher.ts). reserve, settle, release and the sweeper's expire are queued per process (queues
// the wallets share on PostgreSQL, one on PGlite): the calls that arrive while a queue's transaction runs are
// done together in the next one (BEGIN, lock, one write statement with the charge rows, any
// charge callbacks, COMMIT),
// applied one after another in arrival order with exactly the decisions of policy.ts, so the results
// are those of running them one at a time. A failing call (unknown reservation or wallet, charge rows
// that throw, a decision that finds the rows inconsistent: LedgerInvariantBroken, logged here at error
// level) fails alone. Across processes the row locks still serialise the batches.
//
// Why not one statement per move: a single READ COMMITTED statement that UPDATEs rows joined to a CTE
// built from another data-modifying CTE (e.g. `UPDATE wallets … FROM r` where r is `UPDATE reservations …
// RETURNING`) silently skips rows whose recheck (EvalPlanQual) runs under concurrent updates. A version
// of this file did that and lost wallet updates under load (test "mixed concurrent …" catches it). Lock
// first, then write with parameters only; a batching implementation must keep that property.
//
// Decisions. Which lots a reservation draws from and in which order, the refusals (not_in_plan,
// insufficient_credit, and key_limit for a reserve carrying its key's cap), how a settle above or below the
// hold moves money, and why finishing twice moves nothing: all in policy.ts, pure, with no database.
//
// Replaceability. Callers use only the `Ledger` interface.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import type { Db } from '../db/db.ts';
import { createBatcher, LedgerInvariantBroken } from './batcher.ts';
import { extendHold, noteInFlight } from './hold-rows.ts';
import { journalSum } from './journal-sum.ts';
import { walletMethods } from './ledger-wallets.ts';
import { sweeperMethods } from './sweep.ts';
import { ANY_VENDOR, type KnownVendors, newId } from './top-up.ts';
import type { FinishOp, FinishOutcome, Ledger, Reservation, ReserveOp, ReserveRequest } from './types.ts';

export type { KeyCap, Ledger, LotBalance, Reservation, ReserveResult, Wallet, WalletBalance } from './types.ts';
export { LedgerInvariantBroken };

interface LedgerOptions {
  clock: Clock;
  /** Owner id written on reservations; default host:pid:random. */
  owner?: string;
  /** Default reservation lifetime (default 15 minutes). */
  reservationTtlMs?: number;
  /**
   * Vendors whose models need credits usable for them, else not_in_plan (default none: billing.yaml names them). Read at each
   * use, so after a config reload admission and GET /v1/models (planAllows) follow the same list.
   */
  planVendors?: () => readonly string[];
  /**
   * The vendors a top-up's `vendors` may name: config/vendors.yaml's keys, read at each restricted top-up so a
   * reload is followed. Without it (tests, the bench) any vendor id is taken (top-up.ts ANY_VENDOR).
   */
  vendors?: KnownVendors;
  /** How long draws wait to be written together (billing.yaml `leases.flush_ms`); read at each wait. */
  drawFlushMs?: () => number;
  /** How many queues the wallets' money moves share on PostgreSQL (billing.yaml `ledger.queues`); read at each move. */
  walletQueues?: () => number;
  /** Whether money moves' COMMITs wait for the server's disk flush (billing.yaml `ledger.synchronous_commit`); read at each batch. */
  flushWal?: () => boolean;
  /** Observes each batch transaction of reserves/settles/releases with its number of ops (tests, metrics). */
  onBatch?: (size: number) => void;
  /** Where a move that failed on a broken invariant (LedgerInvariantBroken) is reported, at error level. */
  log?: { error: (o: object, m: string) => void };
}

export { WALLET_CHANGED_CHANNEL } from './types.ts';

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
 * The wallet a finish is queued under: the Reservation object's; for a bare id, on PostgreSQL, looked up
 * first (a wallet's moves share one queue); on PGlite, null (one queue; the batch looks it up).
 * Synchronous when it can be, so the op is queued within the call (see the batcher on PGlite).
 */
function walletOf(r: Reservation | string, embedded: boolean, db: Db): string | null | Promise<string> {
  if (typeof r !== 'string' && typeof r.walletId === 'string') return r.walletId;
  if (embedded) return null;
  const id = resId(r);
  return db.query<{ wallet_id: string }>('SELECT wallet_id FROM reservations WHERE id = $1', [id]).then((q) => {
    if (q.rows.length === 0) throw errors.notFound(`No reservation '${id}'.`);
    return q.rows[0].wallet_id;
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

export function createLedger(db: Db, opts: LedgerOptions): Ledger {
  const clock = opts.clock;
  const owner = opts.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const ttl = opts.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
  const planVendors = opts.planVendors ?? (() => []);
  const vendors = opts.vendors ?? ANY_VENDOR;

  // The batcher reads the queue, flush and commit settings from the same options, at each use.
  const batcher = createBatcher({ ...opts, db, clock, owner, planVendors });

  const reportBroken = brokenReporter(opts.log);

  const finish = (reservation: Reservation | string, op: Omit<FinishOp, 'walletId' | 'id'>): Promise<FinishOutcome> => {
    const id = resId(reservation);
    const walletId = walletOf(reservation, batcher.embedded, db);
    if (walletId instanceof Promise) return walletId.then((w) => batcher.finish({ ...op, id, walletId: w }).catch(reportBroken));
    return batcher.finish({ ...op, id, walletId }).catch(reportBroken);
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

    extend: (reservation, expiresAt) => extendHold(db, resId(reservation), expiresAt),
    noteInFlight: (leases) => noteInFlight(db, leases),

    ...sweeperMethods(db, batcher.finish, clock, opts.log),
    journalSum: (walletId) => journalSum(db, walletId),
  };
}
