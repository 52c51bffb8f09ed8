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
import type { Db } from '../db/db.ts';
import { errors, hasUnpairedSurrogate } from '../core/errors.ts';
import { toBigInt } from '../core/money.ts';
import { createBatcher, LedgerInvariantBroken } from './batcher.ts';
import { readWalletFacts } from './batch-sql.ts';
import { planAllows } from './policy.ts';
import { withRetry } from './retry.ts';
import { ANY_VENDOR, type KnownVendors, newId, topUpIn } from './top-up.ts';
import { sweepExpired } from './sweep.ts';
import { lotFromRow, walletFromRow } from './wallet-rows.ts';
import { extendHold, noteInFlight } from './hold-rows.ts';
import type { FinishOp, FinishOutcome, Ledger, Reservation, SweepErrorHandler } from './types.ts';

export { LedgerInvariantBroken };

export type { KeyCap, Ledger, LotBalance, Reservation, ReserveResult, Wallet, WalletBalance } from './types.ts';

interface LedgerOptions {
  clock: Clock;
  /** Owner id written on reservations; default host:pid:random. */
  owner?: string;
  /** Default reservation lifetime (default 15 minutes). */
  reservationTtlMs?: number;
  /**
   * Vendors whose models need credits usable for them, else not_in_plan (default ['c']). Read at each
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

/** NOTIFY channel carrying a wallet id whenever its owner changes. */
export const WALLET_CHANGED_CHANNEL = 'gateway_wallet_changed';

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

export function createLedger(db: Db, opts: LedgerOptions): Ledger {
  const clock = opts.clock;
  const owner = opts.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const ttl = opts.reservationTtlMs ?? DEFAULT_RESERVATION_TTL_MS;
  const planVendors = opts.planVendors ?? (() => ['c']);
  const vendors = opts.vendors ?? ANY_VENDOR;

  const batcher = createBatcher({
    db,
    clock,
    owner,
    planVendors,
    drawFlushMs: opts.drawFlushMs,
    walletQueues: opts.walletQueues,
    flushWal: opts.flushWal,
    onBatch: opts.onBatch,
  });

  const reportBroken = brokenReporter(opts.log);

  const finish = (reservation: Reservation | string, op: Omit<FinishOp, 'walletId' | 'id'>): Promise<FinishOutcome> => {
    const id = resId(reservation);
    const walletId = walletOf(reservation, batcher.embedded, db);
    if (walletId instanceof Promise) return walletId.then((w) => batcher.finish({ ...op, id, walletId: w }).catch(reportBroken));
    return batcher.finish({ ...op, id, walletId }).catch(reportBroken);
  };

  const ledger: Ledger = {
    owner,

    async createWallet(input = {}) {
      const keySlots = input.keySlots ?? 100;
      if (!Number.isSafeInteger(keySlots) || keySlots < 0)
        throw errors.invalidRequest('key_slots must be a non-negative whole number.', 'key_slots');
      const id = input.id ?? newId('wal');
      const ownerId = input.ownerId ?? newId('usr');
      const credits = input.credits ?? 0;
      return withRetry(() =>
        db.transaction(async (tx) => {
          let r = await tx.query(
            `INSERT INTO wallets (id, owner_id, splits_usage, key_slots, created_at) VALUES ($1, $2, $3, $4, $5::timestamptz) RETURNING *`,
            [id, ownerId, input.splitsUsage ?? false, keySlots, clock.now().toISOString()],
          );
          if (input.name != null) r = await tx.query('UPDATE wallets SET name = $2 WHERE id = $1 RETURNING *', [id, input.name]);
          const lot = (typeof credits === 'bigint' ? credits > 0n : credits > 0)
            ? await topUpIn(clock, tx, id, { credits, beside: input.beside }, vendors)
            : null;
          return { ...walletFromRow(r.rows[0]), lot };
        }),
      );
    },

    async getWallet(walletId) {
      const r = await db.query('SELECT * FROM wallets WHERE id = $1', [walletId]);
      return r.rows.length ? walletFromRow(r.rows[0]) : null;
    },

    async setOwner(walletId, ownerId, beside) {
      if (typeof ownerId !== 'string' || ownerId.length === 0 || hasUnpairedSurrogate(ownerId))
        throw errors.invalidRequest('owner_id must be a non-empty string.', 'owner_id');
      const row = await db.transaction(async (tx) => {
        // The previous owner read under the row's lock, so two changes at once each see the one before them.
        const previous = await tx.query<{ owner_id: string }>('SELECT owner_id FROM wallets WHERE id = $1 FOR UPDATE', [walletId]);
        if (previous.rows.length === 0) throw errors.notFound(`No wallet '${walletId}'.`);
        // A change of owner starts a new ownership generation, which ends the old owner's sessions and links
        // (dashboard/sessions.ts); setting the same owner again changes nothing.
        const r = await tx.query(
          `UPDATE wallets SET owner_id = $2, owner_generation = owner_generation + (owner_id IS DISTINCT FROM $2)::int
            WHERE id = $1 RETURNING *`,
          [walletId, ownerId],
        );
        if (beside && previous.rows[0].owner_id !== ownerId) await beside(tx, previous.rows[0].owner_id);
        return r.rows[0];
      });
      await db.notify(WALLET_CHANGED_CHANNEL, walletId).catch(() => {});
      return walletFromRow(row);
    },

    topUp(walletId, input) {
      return withRetry(() => db.transaction((tx) => topUpIn(clock, tx, walletId, input, vendors)));
    },

    async balance(walletId) {
      const w = await db.query<{ available_nano: string; reserved_nano: string }>(
        'SELECT available_nano, reserved_nano FROM wallets WHERE id = $1',
        [walletId],
      );
      if (w.rows.length === 0) throw errors.notFound(`No wallet '${walletId}'.`);
      const lots = await db.query('SELECT * FROM credit_lots WHERE wallet_id = $1 ORDER BY seq', [walletId]);
      return {
        walletId,
        availableNano: toBigInt(w.rows[0].available_nano),
        reservedNano: toBigInt(w.rows[0].reserved_nano),
        lots: lots.rows.map(lotFromRow),
      };
    },

    async usableNano(walletId, vendor) {
      const r = await db.query<{ s: string | null }>(
        `SELECT COALESCE(sum(available_nano), 0)::text AS s FROM credit_lots
          WHERE wallet_id = $1 AND (vendors IS NULL OR $2 = ANY(vendors))`,
        [walletId, vendor],
      );
      return toBigInt(r.rows[0]?.s ?? '0');
    },

    async planAllows(walletId, vendor) {
      const restricted = planVendors();
      if (!restricted.includes(vendor)) return true;
      const facts = (await readWalletFacts(db, [{ walletId, vendor }])).get(walletId, vendor);
      return planAllows(restricted, vendor, facts ?? { anyLot: false, usableLot: false });
    },

    async reserve(req) {
      const amount = req.amountNano;
      if (typeof amount !== 'bigint' || amount < 0n) throw new RangeError('amountNano must be a non-negative bigint');
      if (req.cap && !req.keyId) throw new RangeError('a key cap needs the keyId it caps');
      const now = clock.now();
      return batcher
        .reserve({
          kind: 'reserve',
          id: newId('res'),
          walletId: req.walletId,
          vendor: req.vendor,
          amountNano: amount,
          callId: req.callId,
          keyId: req.keyId ?? null,
          createdAt: now,
          expiresAt: req.expiresAt ?? new Date(now.getTime() + ttl),
          cap: req.cap,
        })
        .catch(reportBroken);
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

    async sweepExpired(now, onError) {
      // With nowhere to report a failed expiry, the first is thrown, once the others are swept.
      const log = opts.log;
      const unreported: unknown[] = [];
      const report: SweepErrorHandler =
        onError ??
        (log
          ? (err, expire) => log.error({ err, ...expire }, 'ledger sweep: expiring a reservation failed')
          : (err) => void unreported.push(err));
      const count = await sweepExpired(db, batcher.finish, now ?? clock.now(), report);
      if (unreported.length > 0) throw unreported[0];
      return count;
    },

    startSweeper({ intervalMs = 30_000, onError } = {}) {
      let running = false;
      const t = setInterval(() => {
        if (running) return;
        running = true;
        ledger
          .sweepExpired(undefined, onError) // without onError, failed expiries go to the ledger's log
          .catch((e) => (onError ? onError(e) : opts.log?.error({ err: e }, 'ledger sweep failed')))
          .finally(() => {
            running = false;
          });
      }, intervalMs);
      t.unref?.();
      return () => clearInterval(t);
    },

    async journalSum(walletId) {
      const r = await db.query<{ lot_id: string; kind: string; s: string }>(
        `SELECT lot_id, kind, sum(amount_nano)::text AS s FROM ledger_journal WHERE wallet_id = $1 GROUP BY lot_id, kind`,
        [walletId],
      );
      const per = new Map<string, Record<string, bigint>>();
      const tot: Record<string, bigint> = { top_up: 0n, reserve: 0n, settle: 0n, release: 0n };
      for (const row of r.rows) {
        const v = toBigInt(row.s);
        const p = per.get(row.lot_id) ?? { top_up: 0n, reserve: 0n, settle: 0n, release: 0n };
        p[row.kind] += v;
        per.set(row.lot_id, p);
        tot[row.kind] += v;
      }
      return {
        toppedUpNano: tot.top_up,
        reservedTotalNano: tot.reserve,
        chargedNano: tot.settle,
        releasedNano: tot.release,
        availableNano: tot.top_up - tot.reserve + tot.release,
        reservedNano: tot.reserve - tot.settle - tot.release,
        lots: [...per.entries()].map(([lotId, p]) => ({
          lotId,
          availableNano: p.top_up - p.reserve + p.release,
          reservedNano: p.reserve - p.settle - p.release,
        })),
      };
    },
  };
  return ledger;
}
