// The ledger's money moves, batched: concurrent reserve, settle, release (and the sweeper's expire) calls
// of one wallet are grouped into one transaction.
//
// Queues. One FIFO queue per wallet (the wallet of the reserve, or of the reservation being finished).
// When a wallet's queue is idle, the first op starts a batch in a microtask (so the ops submitted by the
// same synchronous code go together, and the transaction starts before any I/O is handled); while that batch's transaction runs, new ops queue; when it
// commits, the next batch takes everything queued, up to MAX_BATCH ops. So each process has at most one
// transaction in flight per wallet (more would only queue on the same lot rows), and different wallets
// never wait for each other (one hot wallet does not slow the others; each busy wallet holds one pool
// connection while its batch runs). The wallet id a finish is queued under is the caller's word (the
// Reservation object's, or looked up from the id); the batch checks it against the locked reservation
// row, so a wrong one costs a retry, never money.
//
// One batch = one transaction, with the exactness rules of ledger.ts:
//   1. lock, in one statement: the live lots (available or reserved above 0) of the batch's wallets in
//      `seq` order, then the reservation rows its settles/releases/expires name, in id order, with their
//      reservation_lots (`FOR UPDATE`). The locked values are current and no other transaction (of this
//      or another process) can move them until COMMIT. A reservation of a wallet whose lots were not
//      locked (wrong wallet id) makes the batch roll back and run again with that wallet's lots locked;
//   2. apply the ops one after another, in queue order, in memory against those values: exactly the
//      decisions the one-op-per-transaction ledger made (draw order, refusals, idempotent finish, excess
//      charged from available as far as it goes, shortfall). Refusals read the wallet facts (exists, has
//      lots, has a lot for the vendor) once per batch, as the one-op ledger did per refusal;
//   3. write everything with one statement of writable CTEs over parameter arrays (new reservations and
//      their lots, lot deltas, wallet deltas, journal rows, finished reservations): each row is written
//      by exactly one CTE, the lots and reservations updated are locked by us already, and no UPDATE
//      joins the output of another data-modifying CTE; the row counts are checked;
//   4. run the settles' `alongside` callbacks in op order on the same transaction; COMMIT; resolve.
// Round trips per batch: BEGIN, lock, write, one per `alongside`, COMMIT (plus one when a reserve is
// refused). Lock order is lots (seq) → reservations (id) → wallet row → whatever `alongside` touches, the
// same for every batch in every process (the sweeper's expires are batches too; extend locks one
// reservation row, a top-up its wallet row and a new lot), so batches do not deadlock each other; when
// they do anyway (two `alongside` writing the same rows in different orders), the batch is retried.
//
// Failure of one op fails only that op:
//   - decided in memory (no such reservation / wallet): the op rejects, it wrote nothing, the others go on;
//   - an `alongside` that throws: the batch's writes are undone and the batch runs again without that op,
//     which rejects with the callback's error (its reservation stays held and uncharged). The others are
//     decided again from the undone state, as if the failed op had never been sent (what one transaction
//     per op gave). Their `alongside` may thus run twice, the first run undone (a deadlock retry always
//     could). On PostgreSQL the transaction is rolled back and run again (the wallet's next batch waits
//     for it); on PGlite it goes back to a savepoint taken at the batch's start, inside the same
//     transaction (another transaction would queue behind the next batch's). No savepoint round trip on
//     PostgreSQL's hot path.
//   - a deadlock/serialization failure anywhere: the whole batch is retried (up to MAX_RETRIES).
import type { Clock } from '../core/clock.ts';
import type { Db, Queryable } from '../db/db.ts';
import { errors, isGatewayError } from '../core/errors.ts';
import type { FinishOp, FinishOutcome, Reservation, ReservationLot, ReserveOp, ReserveResult } from './types.ts';
import { toBigInt } from '../core/money.ts';
import { MAX_RETRIES, backoff, isRetryable } from './retry.ts';

export const MAX_BATCH = 64;

/** Restricted lots first, then unrestricted; oldest first within each group. */
export const drawOrder = (a: { vendors: string[] | null; seq: bigint }, b: { vendors: string[] | null; seq: bigint }): number => {
  const ra = a.vendors === null ? 1 : 0;
  const rb = b.vendors === null ? 1 : 0;
  if (ra !== rb) return ra - rb;
  return a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0;
};

type Op = ReserveOp | FinishOp;
type Outcome = { ok: true; value: ReserveResult | FinishOutcome } | { ok: false; error: unknown };

interface Pending {
  op: Op;
  resolve: (v: ReserveResult | FinishOutcome) => void;
  reject: (e: unknown) => void;
}

interface LotState {
  id: string;
  walletId: string;
  seq: bigint;
  vendors: string[] | null;
  avail: bigint;
  reserved: bigint;
}

interface ResState {
  id: string;
  walletId: string;
  vendor: string;
  amount: bigint;
  state: string;
  charged: bigint;
  expiresAt: Date;
  /** lot id → amount the reservation holds on it */
  held: Map<string, bigint>;
}

class AlongsideFailed extends Error {
  constructor(
    readonly pending: Pending,
    readonly error: unknown,
  ) {
    super('alongside failed');
  }
}

export interface BatcherOptions {
  db: Db;
  clock: Clock;
  /** Owner written on new reservations. */
  owner: string;
  planVendors: ReadonlySet<string>;
  maxBatch?: number;
  /** Observes each batch transaction attempt (tests). */
  onBatch?: (size: number) => void;
}

export interface Batcher {
  reserve(op: ReserveOp): Promise<ReserveResult>;
  finish(op: FinishOp): Promise<FinishOutcome>;
  /** PGlite: one queue for all wallets, so a finish needs no wallet id. */
  readonly embedded: boolean;
}

// ---------------------------------------------------------------------------------------------------
// SQL. Locks first (FOR UPDATE, fixed order), then one write statement with parameters only.

// Locks, in one statement: first the live lots of the batch's wallets in `seq` order (a lot with nothing
// available and nothing reserved can never move again: new money arrives as new lots, so it need not be
// locked), then the reservations the batch finishes in id order (with what they hold per lot). Every batch
// locks in this order. The CTEs are materialized and the UNION ALL reads the first one to its end before
// the second.
const LOCK_SQL = `
WITH lots AS MATERIALIZED (
  SELECT l.id, l.wallet_id, l.seq, l.vendors, l.available_nano, l.reserved_nano
    FROM credit_lots l
   WHERE l.wallet_id = ANY($1::text[]) AND (l.available_nano > 0 OR l.reserved_nano > 0)
   ORDER BY l.seq
     FOR UPDATE
), res AS MATERIALIZED (
  SELECT r.id, r.wallet_id, r.vendor, r.amount_nano, r.state, r.charged_nano, r.expires_at,
         rl.lot_id, rl.amount_nano AS held_nano
    FROM reservations r
    LEFT JOIN reservation_lots rl ON rl.reservation_id = r.id
   WHERE r.id = ANY($2::text[])
   ORDER BY r.id
     FOR UPDATE OF r
)
SELECT 'lot' AS row_kind, id, wallet_id, seq::text AS seq, vendors, available_nano, reserved_nano,
       NULL::text AS vendor, NULL::bigint AS amount_nano, NULL::text AS state, NULL::bigint AS charged_nano,
       NULL::timestamptz AS expires_at, NULL::text AS lot_id, NULL::bigint AS held_nano
  FROM lots
UNION ALL
SELECT 'reservation', id, wallet_id, NULL, NULL, NULL, NULL, vendor, amount_nano, state, charged_nano, expires_at, lot_id, held_nano
  FROM res`;

// For refusals only (as the one-op ledger did, read without locks): does the wallet exist, has it any lot,
// has it any lot that could ever serve the vendor.
const WALLET_INFO_SQL = `
SELECT u.wallet_id, u.vendor,
       EXISTS (SELECT 1 FROM wallets w WHERE w.id = u.wallet_id) AS wallet,
       EXISTS (SELECT 1 FROM credit_lots l WHERE l.wallet_id = u.wallet_id) AS any_lot,
       EXISTS (SELECT 1 FROM credit_lots l WHERE l.wallet_id = u.wallet_id AND (l.vendors IS NULL OR u.vendor = ANY(l.vendors))) AS usable_lot
  FROM unnest($1::text[], $2::text[]) AS u(wallet_id, vendor)`;

const WRITE_SQL = `
WITH new_res AS (
  INSERT INTO reservations (id, wallet_id, owner, call_id, key_id, vendor, amount_nano, state, created_at, expires_at)
  SELECT u.id, u.wallet_id, $1, u.call_id, u.key_id, u.vendor, u.amount, 'held', u.created_at, u.expires_at
    FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::timestamptz[], $9::timestamptz[])
      AS u(id, wallet_id, call_id, key_id, vendor, amount, created_at, expires_at)
  RETURNING id
), new_res_lots AS (
  INSERT INTO reservation_lots (reservation_id, lot_id, amount_nano)
  SELECT u.reservation_id, u.lot_id, u.amount
    FROM unnest($10::text[], $11::text[], $12::bigint[]) AS u(reservation_id, lot_id, amount)
  RETURNING reservation_id
), lots AS (
  UPDATE credit_lots l
     SET available_nano = l.available_nano + d.avail, reserved_nano = l.reserved_nano + d.reserved
    FROM unnest($13::text[], $14::bigint[], $15::bigint[]) AS d(id, avail, reserved)
   WHERE l.id = d.id
  RETURNING l.id
), wallets_moved AS (
  UPDATE wallets w
     SET available_nano = w.available_nano + d.avail, reserved_nano = w.reserved_nano + d.reserved
    FROM unnest($16::text[], $17::bigint[], $18::bigint[]) AS d(id, avail, reserved)
   WHERE w.id = d.id
  RETURNING w.id
), journal AS (
  INSERT INTO ledger_journal (wallet_id, lot_id, reservation_id, kind, amount_nano, at)
  SELECT u.wallet_id, u.lot_id, u.reservation_id, u.kind, u.amount, u.at
    FROM unnest($19::text[], $20::text[], $21::text[], $22::text[], $23::bigint[], $24::timestamptz[])
      AS u(wallet_id, lot_id, reservation_id, kind, amount, at)
  RETURNING id
), finished AS (
  UPDATE reservations r
     SET state = d.state, charged_nano = d.charged, finished_at = d.at
    FROM unnest($25::text[], $26::text[], $27::bigint[], $28::timestamptz[]) AS d(id, state, charged, at)
   WHERE r.id = d.id
  RETURNING r.id
)
SELECT (SELECT count(*) FROM new_res)::int AS new_res, (SELECT count(*) FROM new_res_lots)::int AS new_res_lots,
       (SELECT count(*) FROM lots)::int AS lots, (SELECT count(*) FROM wallets_moved)::int AS wallets,
       (SELECT count(*) FROM journal)::int AS journal, (SELECT count(*) FROM finished)::int AS finished`;

type JournalKind = 'reserve' | 'settle' | 'release';

/** Everything one batch writes, accumulated while its ops are decided in memory. */
class Writes {
  readonly newRes: ReserveOp[] = [];
  readonly newResLots: { reservationId: string; lotId: string; amount: bigint }[] = [];
  readonly lotDelta = new Map<string, { avail: bigint; reserved: bigint }>();
  readonly walletDelta = new Map<string, { avail: bigint; reserved: bigint }>();
  readonly journal: { walletId: string; lotId: string; reservationId: string; kind: JournalKind; amount: bigint; at: Date }[] = [];
  readonly finished = new Map<string, { state: string; charged: bigint; at: Date }>();

  /** Moves `n` on a locked lot (in memory and in the pending writes). */
  move(lot: LotState, reservationId: string, kind: JournalKind, n: bigint, at: Date) {
    if (n <= 0n) return;
    const avail = kind === 'reserve' ? -n : kind === 'release' ? n : 0n;
    const reserved = kind === 'reserve' ? n : -n;
    lot.avail += avail;
    lot.reserved += reserved;
    if (lot.avail < 0n || lot.reserved < 0n) throw new Error(`ledger: lot ${lot.id} would go negative`);
    const ld = this.lotDelta.get(lot.id) ?? { avail: 0n, reserved: 0n };
    ld.avail += avail;
    ld.reserved += reserved;
    this.lotDelta.set(lot.id, ld);
    const wd = this.walletDelta.get(lot.walletId) ?? { avail: 0n, reserved: 0n };
    wd.avail += avail;
    wd.reserved += reserved;
    this.walletDelta.set(lot.walletId, wd);
    this.journal.push({ walletId: lot.walletId, lotId: lot.id, reservationId, kind, amount: n, at });
  }

  get empty(): boolean {
    return this.newRes.length === 0 && this.journal.length === 0 && this.finished.size === 0;
  }

  async write(tx: Queryable, owner: string): Promise<void> {
    const lots = [...this.lotDelta].filter(([, d]) => d.avail !== 0n || d.reserved !== 0n);
    const wallets = [...this.walletDelta].filter(([, d]) => d.avail !== 0n || d.reserved !== 0n);
    const fin = [...this.finished];
    const s = (n: bigint) => n.toString();
    const r = await tx.query<{ new_res: number; new_res_lots: number; lots: number; wallets: number; journal: number; finished: number }>(WRITE_SQL, [
      owner,
      this.newRes.map((o) => o.id),
      this.newRes.map((o) => o.walletId),
      this.newRes.map((o) => o.callId),
      this.newRes.map((o) => o.keyId),
      this.newRes.map((o) => o.vendor),
      this.newRes.map((o) => s(o.amountNano)),
      this.newRes.map((o) => o.createdAt.toISOString()),
      this.newRes.map((o) => o.expiresAt.toISOString()),
      this.newResLots.map((x) => x.reservationId),
      this.newResLots.map((x) => x.lotId),
      this.newResLots.map((x) => s(x.amount)),
      lots.map(([id]) => id),
      lots.map(([, d]) => s(d.avail)),
      lots.map(([, d]) => s(d.reserved)),
      wallets.map(([id]) => id),
      wallets.map(([, d]) => s(d.avail)),
      wallets.map(([, d]) => s(d.reserved)),
      this.journal.map((j) => j.walletId),
      this.journal.map((j) => j.lotId),
      this.journal.map((j) => j.reservationId),
      this.journal.map((j) => j.kind),
      this.journal.map((j) => s(j.amount)),
      this.journal.map((j) => j.at.toISOString()),
      fin.map(([id]) => id),
      fin.map(([, f]) => f.state),
      fin.map(([, f]) => s(f.charged)),
      fin.map(([, f]) => f.at.toISOString()),
    ]);
    // Every row we meant to write was written (the lots and reservations are locked by us; a wallet row
    // cannot disappear). A mismatch is a bug: fail the batch rather than commit a partial move.
    const got = r.rows[0];
    const want = {
      new_res: this.newRes.length,
      new_res_lots: this.newResLots.length,
      lots: lots.length,
      wallets: wallets.length,
      journal: this.journal.length,
      finished: fin.length,
    };
    for (const k of Object.keys(want) as (keyof typeof want)[]) {
      if (Number(got?.[k]) !== want[k]) throw new Error(`ledger batch wrote ${got?.[k]} ${k} rows, expected ${want[k]}`);
    }
  }
}

/** The batch finishes reservations of wallets whose lots it did not lock: run it again locking them too. */
class MissingWallets extends Error {
  constructor(readonly walletIds: string[]) {
    super('reservations of other wallets');
  }
}

interface LockRow {
  row_kind: 'lot' | 'reservation';
  id: string;
  wallet_id: string;
  seq: string | null;
  vendors: string[] | null;
  available_nano: string | null;
  reserved_nano: string | null;
  vendor: string | null;
  amount_nano: string | null;
  state: string | null;
  charged_nano: string | null;
  expires_at: string | Date | null;
  lot_id: string | null;
  held_nano: string | null;
}

interface Queue {
  pending: Pending[];
  /** Batches started and not ended. */
  running: number;
  /** A batch was started and has not yet taken its ops. */
  waiting: boolean;
}

export function createBatcher(opts: BatcherOptions): Batcher {
  const { db, clock, owner, planVendors } = opts;
  const maxBatch = opts.maxBatch ?? MAX_BATCH;
  // PGlite runs one transaction at a time, behind a FIFO mutex that plain queries queue on too. There:
  // one queue for all wallets, and a batch's transaction is requested the moment an op arrives (unless one
  // is already waiting to start); it takes the ops queued when it starts. So an op's transaction is queued
  // before any query issued after the call, as with one transaction per op (a balance read right after a
  // settle sees it). PostgreSQL: one queue per wallet and one batch in flight per queue; when it ends, the
  // next takes everything queued meanwhile.
  const embedded = db.kind === 'pglite';
  const queues = new Map<string, Queue>();

  function submit(walletId: string | null, op: Op): Promise<ReserveResult | FinishOutcome> {
    return new Promise((resolve, reject) => {
      const key = embedded ? '' : (walletId ?? '');
      let q = queues.get(key);
      if (!q) queues.set(key, (q = { pending: [], running: 0, waiting: false }));
      q.pending.push({ op, resolve, reject });
      if (!q.waiting && (embedded || q.running === 0)) start(key, q);
    });
  }

  function start(key: string, q: Queue): void {
    q.waiting = true;
    q.running++;
    const take = (): Pending[] => {
      q.waiting = false;
      const batch = q.pending.splice(0, maxBatch);
      if (embedded && q.pending.length > 0) start(key, q); // more than one batch's worth: queue the next now
      return batch;
    };
    void runBatch(take).finally(() => {
      q.running--;
      if (!q.waiting && q.pending.length > 0 && (embedded || q.running === 0)) start(key, q);
      else if (q.running === 0 && !q.waiting && q.pending.length === 0) queues.delete(key);
    });
  }

  /**
   * Runs one batch to its end: its transaction takes the queued ops when it starts (`take`); settles every
   * op's promise; never throws.
   */
  async function runBatch(take: () => Pending[]): Promise<void> {
    let active: Pending[] | null = null;
    let attempt = 0;
    const extraWallets = new Set<string>();
    for (;;) {
      let outcomes: Outcome[];
      try {
        outcomes = await db.transaction(async (tx) => {
          if (active === null) {
            // PGlite works on this thread, mostly in microtasks: without a pause here a batch would start
            // and end before the event loop read the next request, one op per transaction. So let the
            // pending I/O run first (holding our place: later queries queue behind this transaction).
            if (embedded) await new Promise((r) => setImmediate(r));
            active = take();
          }
          if (!embedded) {
            opts.onBatch?.(active.length);
            return active.length > 0 ? processBatch(tx, active, extraWallets) : [];
          }
          // PGlite: a batch that must run again does so inside this transaction (from a savepoint), as
          // another transaction would queue behind the next batch's and the order would not hold.
          for (;;) {
            if (active.length === 0) return [];
            opts.onBatch?.(active.length);
            const savepoint = active.some((p) => p.op.kind === 'settle' && p.op.alongside);
            if (savepoint) await tx.query('SAVEPOINT ledger_batch');
            try {
              return await processBatch(tx, active, extraWallets);
            } catch (e) {
              if (e instanceof MissingWallets) {
                // thrown before anything was written
                for (const id of e.walletIds) extraWallets.add(id);
                continue;
              }
              if (!(e instanceof AlongsideFailed) || !savepoint) throw e;
              await tx.query('ROLLBACK TO SAVEPOINT ledger_batch');
              e.pending.reject(e.error);
              active = active.filter((p) => p !== e.pending);
            }
          }
        });
      } catch (e) {
        active ??= take(); // the transaction failed before it started (no connection): fail what it would have taken
        if (e instanceof MissingWallets) {
          for (const id of e.walletIds) extraWallets.add(id);
          continue;
        }
        if (e instanceof AlongsideFailed) {
          if (isRetryable(e.error) && attempt < MAX_RETRIES) {
            await backoff(attempt++);
            continue;
          }
          // This op alone fails; the others are decided again without it.
          e.pending.reject(e.error);
          active = active.filter((p) => p !== e.pending);
          if (active.length === 0) return;
          continue;
        }
        if (isRetryable(e) && attempt < MAX_RETRIES) {
          await backoff(attempt++);
          continue;
        }
        for (const p of active) p.reject(e);
        return;
      }
      const done = active!;
      done.forEach((p, i) => {
        const o = outcomes[i];
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
      return;
    }
  }

  async function processBatch(tx: Queryable, batch: Pending[], extraWallets: ReadonlySet<string>): Promise<Outcome[]> {
    const at = clock.now();

    // 1. Lock the live lots of the batch's wallets (seq order), then the reservations it finishes.
    const walletIds = new Set<string>(extraWallets);
    const unknown: string[] = [];
    for (const p of batch) {
      if (p.op.walletId !== null) walletIds.add(p.op.walletId);
      else unknown.push(p.op.id);
    }
    if (unknown.length > 0) {
      // Finishes called with a bare reservation id: their wallets (a reservation's wallet never changes,
      // so a plain read is enough; the lock below checks the rows).
      const found = await tx.query<{ wallet_id: string }>('SELECT DISTINCT wallet_id FROM reservations WHERE id = ANY($1::text[])', [unknown]);
      for (const r of found.rows) walletIds.add(r.wallet_id);
    }
    const resIds = [...new Set(batch.flatMap((p) => (p.op.kind === 'reserve' ? [] : [p.op.id])))];
    const rows = (await tx.query<LockRow>(LOCK_SQL, [[...walletIds], resIds])).rows;
    const lots = new Map<string, LotState>();
    const res = new Map<string, ResState>();
    const ordered: LotState[] = [];
    for (const row of rows) {
      if (row.row_kind === 'lot') {
        const l: LotState = {
          id: row.id,
          walletId: row.wallet_id,
          seq: BigInt(row.seq!),
          vendors: row.vendors ?? null,
          avail: toBigInt(row.available_nano),
          reserved: toBigInt(row.reserved_nano),
        };
        ordered.push(l);
        lots.set(l.id, l);
        continue;
      }
      let r = res.get(row.id);
      if (!r) {
        r = {
          id: row.id,
          walletId: row.wallet_id,
          vendor: row.vendor!,
          amount: toBigInt(row.amount_nano),
          state: row.state!,
          charged: row.charged_nano === null ? 0n : toBigInt(row.charged_nano),
          expiresAt: new Date(row.expires_at!),
          held: new Map(),
        };
        res.set(r.id, r);
      }
      if (row.lot_id !== null) r.held.set(row.lot_id, toBigInt(row.held_nano));
    }
    ordered.sort(drawOrder);
    // A reservation of a wallet whose lots we did not lock (the caller's wallet id was wrong) whose money
    // may move: run the batch again with that wallet's lots locked up front (keeps the lock order).
    const missing = new Set<string>();
    for (const p of batch) {
      if (p.op.kind === 'reserve') continue;
      const r = res.get(p.op.id);
      if (r && !walletIds.has(r.walletId) && (r.state === 'held' || (r.state === 'expired' && p.op.kind === 'settle'))) missing.add(r.walletId);
    }
    if (missing.size > 0) throw new MissingWallets([...missing]);
    const usableLots = (walletId: string, vendor: string) =>
      ordered.filter((l) => l.walletId === walletId && l.avail > 0n && (l.vendors === null || l.vendors.includes(vendor)));

    // 2. Decide every op in order, in memory.
    const w = new Writes();
    const outcomes: Outcome[] = [];
    const alongside: { pending: Pending; charged: bigint }[] = [];
    /** Reserves that need the wallet facts (refusal, or nothing to draw from) before they are final. */
    const needInfo: { index: number; op: ReserveOp; usable: bigint }[] = [];

    const reserveOne = (op: ReserveOp, index: number): ReserveResult | null => {
      const usable = usableLots(op.walletId, op.vendor);
      const total = usable.reduce((a, l) => a + l.avail, 0n);
      if (usable.length === 0 || total < op.amountNano) {
        // Refused or (amount 0, no lot to draw from) accepted: nothing moves either way; decided after
        // the info query.
        needInfo.push({ index, op, usable: total });
        return null;
      }
      const drawn: ReservationLot[] = [];
      let left = op.amountNano;
      for (const l of usable) {
        if (left <= 0n) break;
        const x = left < l.avail ? left : l.avail;
        w.move(l, op.id, 'reserve', x, op.createdAt);
        drawn.push({ lotId: l.id, amountNano: x });
        left -= x;
      }
      w.newRes.push(op);
      for (const d of drawn) w.newResLots.push({ reservationId: op.id, lotId: d.lotId, amount: d.amountNano });
      return { ok: true, reservation: reservationOf(op, drawn) };
    };

    const finishOne = (op: FinishOp, pending: Pending): FinishOutcome => {
      const s = res.get(op.id);
      if (!s) throw errors.notFound(`No reservation '${op.id}'.`);
      const noop: FinishOutcome = { chargedNano: s.charged, shortfallNano: 0n, alreadyFinished: true, releasedNano: 0n, finished: false };
      if (s.state === 'settled' || s.state === 'released') return noop;
      if (s.state === 'expired' && op.kind !== 'settle') return noop;
      if (op.kind === 'expire' && op.expireBefore && s.expiresAt > op.expireBefore) return { ...noop, alreadyFinished: false }; // extended meanwhile
      const held = s.state === 'held';
      const heldLots: { lot: LotState; h: bigint }[] = [];
      if (held) {
        for (const [lotId, h] of s.held) {
          if (h <= 0n) continue;
          const lot = lots.get(lotId);
          if (!lot) throw new Error(`ledger: reservation ${s.id} holds ${h} on lot ${lotId}, which is not live`);
          heldLots.push({ lot, h });
        }
        heldLots.sort((a, b) => drawOrder(a.lot, b.lot));
      }
      if (op.kind === 'settle') {
        const actual = op.actualNano < 0n ? 0n : op.actualNano;
        let toCharge = actual;
        let released = 0n;
        // 1. from what the reservation holds (restricted lots first), releasing the rest
        for (const { lot, h } of heldLots) {
          const x = toCharge < h ? toCharge : h;
          w.move(lot, s.id, 'settle', x, at);
          w.move(lot, s.id, 'release', h - x, at);
          released += h - x;
          toCharge -= x;
        }
        // 2. the excess from available balance, as far as it goes
        if (toCharge > 0n) {
          for (const lot of usableLots(s.walletId, s.vendor)) {
            if (toCharge <= 0n) break;
            const x = toCharge < lot.avail ? toCharge : lot.avail;
            w.move(lot, s.id, 'reserve', x, at);
            w.move(lot, s.id, 'settle', x, at);
            toCharge -= x;
          }
        }
        const charged = actual - toCharge;
        s.state = 'settled';
        s.charged = charged;
        w.finished.set(s.id, { state: 'settled', charged, at });
        if (op.alongside && charged > 0n) alongside.push({ pending, charged });
        return { chargedNano: charged, shortfallNano: toCharge, alreadyFinished: false, releasedNano: released, finished: true };
      }
      for (const { lot, h } of heldLots) w.move(lot, s.id, 'release', h, at);
      const state = op.kind === 'expire' ? 'expired' : 'released';
      s.state = state;
      s.charged = 0n;
      w.finished.set(s.id, { state, charged: 0n, at });
      return { chargedNano: 0n, shortfallNano: 0n, alreadyFinished: false, releasedNano: s.amount, finished: true };
    };

    batch.forEach((p, index) => {
      try {
        if (p.op.kind === 'reserve') {
          const r = reserveOne(p.op, index);
          outcomes.push(r ? { ok: true, value: r } : { ok: false, error: new Error('undecided') });
        } else {
          outcomes.push({ ok: true, value: finishOne(p.op, p) });
        }
      } catch (e) {
        // A refusal of this op (thrown before it moved anything). Anything else is an inconsistency that
        // may have left part of the op's moves recorded: fail the whole batch, write nothing.
        if (!isGatewayError(e)) throw e;
        outcomes.push({ ok: false, error: e });
      }
    });

    // 2b. Refusals: the wallet facts, read once for the whole batch.
    if (needInfo.length > 0) {
      const pairs = [...new Map(needInfo.map((n) => [`${n.op.walletId}\u0000${n.op.vendor}`, n.op])).values()];
      const rows = (
        await tx.query<{ wallet_id: string; vendor: string; wallet: boolean; any_lot: boolean; usable_lot: boolean }>(WALLET_INFO_SQL, [
          pairs.map((o) => o.walletId),
          pairs.map((o) => o.vendor),
        ])
      ).rows;
      const info = new Map(rows.map((r) => [`${r.wallet_id}\u0000${r.vendor}`, r]));
      for (const { index, op, usable } of needInfo) {
        const row = info.get(`${op.walletId}\u0000${op.vendor}`);
        if (!row || !row.wallet) {
          outcomes[index] = { ok: false, error: errors.notFound(`No wallet '${op.walletId}'.`) };
        } else if (planVendors.has(op.vendor) && row.any_lot && !row.usable_lot) {
          outcomes[index] = { ok: true, value: { ok: false, reason: 'not_in_plan', availableNano: 0n } };
        } else if (usable < op.amountNano) {
          outcomes[index] = { ok: true, value: { ok: false, reason: 'insufficient_credit', availableNano: usable } };
        } else {
          // amount 0 and nothing to draw from: a reservation of nothing
          w.newRes.push(op);
          outcomes[index] = { ok: true, value: { ok: true, reservation: reservationOf(op, []) } };
        }
      }
    }

    // 3. Write, 4. alongside in op order (COMMIT follows).
    if (!w.empty) await w.write(tx, owner);
    for (const { pending, charged } of alongside) {
      try {
        await (pending.op as FinishOp).alongside!(tx, charged);
      } catch (e) {
        throw new AlongsideFailed(pending, e);
      }
    }
    return outcomes;
  }

  const reservationOf = (op: ReserveOp, lots: ReservationLot[]): Reservation => ({
    id: op.id,
    walletId: op.walletId,
    vendor: op.vendor,
    amountNano: op.amountNano,
    callId: op.callId,
    keyId: op.keyId,
    owner,
    createdAt: op.createdAt,
    expiresAt: op.expiresAt,
    lots,
  });

  return {
    embedded,
    reserve: (op) => submit(op.walletId, op) as Promise<ReserveResult>,
    finish: (op) => submit(op.walletId, op) as Promise<FinishOutcome>,
  };
}
