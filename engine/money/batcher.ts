// The ledger's money moves, batched: concurrent reserve, settle, release (and the sweeper's expire) calls
// are grouped into one transaction.
//
// Queues (batch-queues.ts): the wallets share billing.yaml's ledger.queues, the draws of all wallets have one,
// and PGlite has one for everything;
// a batch takes what its queue holds when its transaction starts. The wallet id a finish is queued under is
// the caller's word (the Reservation object's, or looked up from the id); the batch checks it against the
// locked reservation row, so a wrong one costs a retry, never money.
//
// One batch = one transaction, with the exactness rules of ledger.ts (the SQL is batch-sql.ts's, the
// decisions policy.ts's):
//   1. lock, in one statement: the live lots (available or reserved above 0) of the batch's wallets in
//      `seq` order, then the reservation rows its settles/releases/expires name, in id order
//      (`FOR UPDATE`); then, in a second statement, what those reservations hold per lot (a joined row is
//      not re-read after a lock wait: batch-sql.ts says why). The values read are current and no other
//      transaction (of this or another process) can move them until COMMIT. A reservation of a wallet
//      whose lots were not locked (wrong wallet id) makes the batch run again with that wallet's lots
//      locked (a `lock-more-wallets` verdict, below);
//   1b. the keys whose cap a reserve carries, in key id order: each key's use counter locked (KeyCap.lockUsed),
//      then what the keys' held reservations hold. A capped reserve commits its hold before the key's
//      lock is let go, so the next one of the key, in any process, counts it;
//   2. apply the ops one after another, in queue order, in memory against those values (a policy.ts
//      Book): exactly the decisions the one-op-per-transaction ledger made (draw order, refusals,
//      idempotent finish, excess charged from available as far as it goes, shortfall). Refusals read the
//      wallet facts (exists, has lots, has a lot for the vendor) once per batch, as the one-op ledger did
//      per refusal;
//   3. write everything with one statement of writable CTEs over parameter arrays (new reservations and
//      their lots, lot deltas, wallet deltas, journal rows, finished reservations): each row is written
//      by exactly one CTE, the lots and reservations updated are locked by us already, and no UPDATE
//      joins the output of another data-modifying CTE; the row counts are checked;
//   4. write the charges' charge rows on the same transaction (batch-charge-rows.ts: the rows of each writer,
//      all charges together, one statement per writer composed into step 3's; then charge callbacks in op
//      order); COMMIT; resolve.
// Round trips per batch: BEGIN, lock (plus the holds' read when it finishes reservations), write (the charge rows
// ride in it), one per charge callback, COMMIT (plus one when a reserve is refused, and one per
// capped key plus one when reserves carry key caps). Lock order is lots (seq) →
// reservations (id) → key counters (key id) → wallet row → whatever the charge rows touch, the
// same for every batch in every process (the sweeper's expires are batches too; extend locks one
// reservation row, a top-up its wallet row and a new lot), so batches do not deadlock each other; when
// they do anyway (two charge callbacks writing the same rows in different orders), the batch is retried.
//
// Failure of one op fails only that op:
//   - decided in memory (no such reservation / wallet): the op rejects, it wrote nothing, the others go on;
//   - its decision finds the rows inconsistent (a lot would go negative, a hold on a lot that is not live:
//     a bug, or a row changed by hand): the op rejects with LedgerInvariantBroken, for the caller to log,
//     and the batch is decided again without it (the Book may hold part of its moves). Nothing is written
//     before the decisions end (the key counters' upsert before them changes no value and is made again),
//     so on PGlite it runs again in the same transaction, with no savepoint to go back to; on PostgreSQL
//     the transaction is rolled back and run again. One broken reservation must not stop the other
//     wallets' moves, nor the sweeper's expiries, that share its batch;
//   - charge rows that throw: the batch's writes are undone and the batch runs again without that op
//     (when a grouped row write throws, first again with each op's rows written on their own, to find it),
//     which rejects with the rows' error (its reservation stays held and uncharged). The others are
//     decided again from the undone state, as if the failed op had never been sent (what one transaction
//     per op gave). Their charge rows may thus be written twice, the first run undone (a deadlock retry always
//     could). On PostgreSQL the transaction is rolled back and run again (the wallet's next batch waits
//     for it); on PGlite it goes back to a savepoint taken at the batch's start, inside the same
//     transaction (another transaction would queue behind the next batch's). No savepoint round trip on
//     PostgreSQL's hot path.
//   - a deadlock/serialization failure anywhere: the whole batch is retried (up to MAX_RETRIES); so are
//     charge rows that failed on such an error, on PostgreSQL, before their op is failed.
//
// Each run of a batch (processBatch) ends in a verdict (batch-verdict.ts), never a thrown one: `done`,
// `lock-more-wallets`, `drop-op` (a broken decision), `rows-failed` (grouped, or one op's). runBatch is one
// loop over them: a verdict other than `done` is undone by a RunAgain chosen once by the database's kind
// (PostgreSQL: throw out of the transaction, rolled back, and act on the verdict outside it; PGlite: back
// to the savepoint when the run wrote charge rows, and act on it inside the same transaction), then the
// batch runs again. Only real failures (deadlocks, lost connections, bugs) are thrown.
import type { Clock } from '../core/clock.ts';
import type { Db, Queryable } from '../db/db.ts';
import { isGatewayError } from '../core/errors.ts';
import type { FinishOp, FinishOutcome, KeyCap, Reservation, ReservationLot, ReserveOp, ReserveResult } from './types.ts';
import { Book, walletsMissingLocks, type KeyStanding } from './policy.ts';
import { lockBatch, readHeldByKey, readWalletFacts, type RecordedDraws, writeMoves } from './batch-sql.ts';
import { MAX_RETRIES, backoff, isRetryable } from './retry.ts';
import {
  type DueChargeRows,
  groupedStatements,
  recordedTransferQueries,
  rowsRecordTransfer,
  writeUngroupedChargeRows,
} from './batch-charge-rows.ts';
import { batchQueues, DEFAULT_DRAW_FLUSH_MS, DEFAULT_WALLET_QUEUES, MAX_BATCH, type Op, type Pending } from './batch-queues.ts';
import { runAgainFor, RunAgainOutside, type Outcome, type Verdict } from './batch-verdict.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A decision found the ledger's rows inconsistent (`cause`: a lot would go negative, a hold on a lot that is
 * not live…): the op `opId` (its reservation's id; a reserve's new one) of wallet `walletId` failed, alone.
 * A bug or a corrupted row, never the caller's doing: log it at error level.
 */
export class LedgerInvariantBroken extends Error {
  constructor(
    readonly kind: Op['kind'],
    readonly opId: string,
    readonly walletId: string | null,
    override readonly cause: unknown,
  ) {
    super(
      `ledger: ${kind} ${opId} of wallet ${walletId ?? '?'} failed on a broken invariant: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
    this.name = 'LedgerInvariantBroken';
  }
}

interface BatcherOptions {
  db: Db;
  clock: Clock;
  /** Owner written on new reservations. */
  owner: string;
  /** The plan-restricted vendors (not_in_plan), read when a batch decides a refusal: a config reload applies to the next one. */
  planVendors: () => readonly string[];
  maxBatch?: number;
  /** How long draws wait after the last draws batch started (DEFAULT_DRAW_FLUSH_MS); read at each wait. */
  drawFlushMs?: () => number;
  /** How many queues the wallets share on PostgreSQL (DEFAULT_WALLET_QUEUES); read at each op. */
  walletQueues?: () => number;
  /** Observes each batch transaction attempt (tests). */
  onBatch?: (size: number) => void;
  /**
   * Whether a batch's COMMIT waits for PostgreSQL to flush it to disk (billing.yaml `ledger.synchronous_commit`);
   * read at each batch. Default true.
   */
  flushWal?: () => boolean;
}

interface Batcher {
  reserve(op: ReserveOp): Promise<ReserveResult>;
  finish(op: FinishOp): Promise<FinishOutcome>;
  /** PGlite: one queue for all wallets, so a finish needs no wallet id. */
  readonly embedded: boolean;
}

export function createBatcher(opts: BatcherOptions): Batcher {
  const { db, clock, owner } = opts;
  const embedded = db.kind === 'pglite';
  const submit = batchQueues({
    embedded,
    maxBatch: opts.maxBatch ?? MAX_BATCH,
    drawFlushMs: opts.drawFlushMs ?? (() => DEFAULT_DRAW_FLUSH_MS),
    walletQueues: opts.walletQueues ?? (() => DEFAULT_WALLET_QUEUES),
    runBatch,
  });

  const runAgain = runAgainFor(db.kind);

  /**
   * Runs one batch to its end: its transaction takes the queued ops when it starts (`take`); settles every
   * op's promise; never throws. One loop over the runs' verdicts: a verdict other than `done` is undone
   * (runAgain) and acted on, inside the transaction (PGlite) or after rolling it back (PostgreSQL), and the
   * batch runs again; outside, charge rows that failed on a retryable error are first retried as they were.
   */
  async function runBatch(take: () => Pending[]): Promise<void> {
    let active: Pending[] | null = null;
    let attempt = 0;
    const extraWallets = new Set<string>();
    /** After a grouped write of charge rows failed: each charge's rows on their own, to find whose they were. */
    let separately = false;
    /** Acts on a verdict that runs the batch again: what it runs again with. */
    const rerunAfter = (v: Exclude<Verdict, { kind: 'done' }>): void => {
      if (v.kind === 'lock-more-wallets') for (const id of v.walletIds) extraWallets.add(id);
      else if (v.kind === 'rows-failed' && v.grouped) separately = true;
      else {
        // This op alone fails; the others are decided again without it, from the undone state.
        v.owner.reject(v.error);
        active = active!.filter((p) => p !== v.owner);
      }
    };
    for (;;) {
      let outcomes: Outcome[];
      try {
        outcomes = await db.transaction(
          async (tx) => {
            if (active === null) {
              // PGlite works on this thread, mostly in microtasks: without a pause here a batch would start
              // and end before the event loop read the next request, one op per transaction. So let the
              // pending I/O run first (holding our place: later queries queue behind this transaction).
              if (embedded) await new Promise((r) => setImmediate(r));
              active = take();
            }
            for (;;) {
              if (active.length === 0) {
                if (!embedded) opts.onBatch?.(0); // PostgreSQL counts an empty take as an attempt
                return [];
              }
              opts.onBatch?.(active.length);
              const marked = await runAgain.begin(tx, active);
              const v = await processBatch(tx, active, extraWallets, separately);
              if (v.kind === 'done') return v.outcomes;
              await runAgain.undo(tx, marked, v); // PostgreSQL: throws RunAgainOutside, rolling back
              rerunAfter(v);
            }
          },
          { flushWal: opts.flushWal?.() ?? true },
        );
      } catch (e) {
        active ??= take(); // the transaction failed before it started (no connection): fail what it would have taken
        if (e instanceof RunAgainOutside) {
          const v = e.verdict;
          if (v.kind === 'rows-failed' && isRetryable(v.error) && attempt < MAX_RETRIES) await backoff(attempt++);
          else rerunAfter(v);
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
      active!.forEach((p, i) => {
        const o = outcomes[i];
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
      return;
    }
  }

  /** One run of a batch in transaction `tx`: its verdict. Throws only on a real failure (a deadlock, a bug…). */
  async function processBatch(tx: Queryable, batch: Pending[], extraWallets: ReadonlySet<string>, separately: boolean): Promise<Verdict> {
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
      const found = await tx.query<{ wallet_id: string }>('SELECT DISTINCT wallet_id FROM reservations WHERE id = ANY($1::text[])', [
        unknown,
      ]);
      for (const r of found.rows) walletIds.add(r.wallet_id);
    }
    const finishes = batch.flatMap((p) => (p.op.kind === 'reserve' ? [] : [p.op]));
    // Draws already written (a retry after an unclear commit) are read with the holds, and not made again.
    const draws = finishes.filter((op) => op.kind === 'draw' && op.drawId);
    const { lots, reservations, drawnBefore } = await lockBatch(
      tx,
      [...walletIds],
      [...new Set(finishes.map((op) => op.id))],
      draws.map((op) => op.drawId!),
      recordedDrawsOf(draws),
    );
    // A reservation of a wallet whose lots we did not lock (the caller's wallet id was wrong) whose money
    // may move: run the batch again with that wallet's lots locked up front (keeps the lock order).
    const missing = walletsMissingLocks(finishes, reservations, walletIds);
    if (missing.length > 0) return { kind: 'lock-more-wallets', walletIds: missing };

    // 1b. The capped keys: their counters locked, their use and holds read.
    const keys = await lockKeyCaps(tx, batch);

    // 2. Decide every op in order, in memory.
    const book = new Book(lots, reservations, keys);
    for (const id of drawnBefore) book.drawnBefore.add(id);
    const outcomes: Outcome[] = [];
    const due: DueChargeRows<Pending>[] = [];
    /** Reserves that need the wallet facts (refusal, or nothing to draw from) before they are final. */
    const undecided: { index: number; op: ReserveOp; usableNano: bigint }[] = [];
    for (const [index, p] of batch.entries()) {
      try {
        if (p.op.kind === 'reserve') {
          const r = book.reserve(p.op);
          if ('undecided' in r) {
            undecided.push({ index, op: p.op, usableNano: r.usableNano });
            outcomes.push({ ok: false, error: new Error('undecided') }); // replaced in 2b
          } else if (!r.ok) {
            outcomes.push({ ok: true, value: r }); // over the key's cap: refused, nothing moved
          } else {
            outcomes.push({ ok: true, value: { ok: true, reservation: reservationOf(p.op, r.lots) } });
          }
        } else {
          const o = book.finish(p.op, at);
          const moved = o.finished || (p.op.kind === 'draw' && !o.alreadyFinished);
          if ((p.op.kind === 'settle' || p.op.kind === 'draw') && p.op.rows && moved)
            due.push({ owner: p, rows: p.op.rows, chargedNano: o.chargedNano, transferId: p.op.drawId ?? p.op.id });
          outcomes.push({ ok: true, value: o });
        }
      } catch (e) {
        // A refusal of this op (thrown before it moved anything). Anything else is an inconsistency that
        // may have left part of the op's moves recorded in the Book: decide the batch again without it.
        if (!isGatewayError(e)) return broke(p, book, e);
        outcomes.push({ ok: false, error: e });
      }
    }

    // 2b. Refusals: the wallet facts, read once for the whole batch.
    if (undecided.length > 0) {
      const facts = await readWalletFacts(
        tx,
        undecided.map((u) => u.op),
      );
      const planVendors = opts.planVendors();
      for (const { index, op, usableNano } of undecided) {
        try {
          const d = book.reserveWithFacts(op, usableNano, facts.get(op.walletId, op.vendor), planVendors);
          outcomes[index] = { ok: true, value: d.ok ? { ok: true, reservation: reservationOf(op, d.lots) } : d };
        } catch (e) {
          if (!isGatewayError(e)) return broke(batch[index], book, e);
          outcomes[index] = { ok: false, error: e };
        }
      }
    }

    // 3. Write the moves with the charge rows, grouped, in one statement; 4. the rest of the charge rows (charge
    // callbacks; COMMIT follows).
    const grouped = groupedStatements(due, separately);
    const recorded = new Set(due.flatMap((d) => (d.owner.op.kind === 'draw' && rowsRecordTransfer(d.rows) ? [d.transferId] : [])));
    try {
      if (!book.moves.empty) await writeMoves(tx, owner, book.moves, grouped, recorded);
      else for (const s of grouped) await tx.query(s.sql, s.params);
    } catch (e) {
      if (grouped.length > 0) return { kind: 'rows-failed', grouped: true, error: e };
      throw e;
    }
    const failed = await writeUngroupedChargeRows(tx, due, separately);
    if (failed) return { kind: 'rows-failed', grouped: false, owner: failed.owner, error: failed.error };
    return { kind: 'done', outcomes };
  }

  /**
   * How the batch's draws already written are found besides their draw rows: the queries of the charge rows that
   * record a draw's id, since a day before the earliest draw (a record's instant is its call's end, decided before
   * its first write; a charge is not retried for a day).
   */
  function recordedDrawsOf(draws: readonly FinishOp[]): RecordedDraws {
    const earliest = draws.reduce((t, op) => Math.min(t, (op.drawnAt ?? clock.now()).getTime()), clock.now().getTime());
    return { queries: recordedTransferQueries(draws), since: new Date(earliest - DAY_MS) };
  }

  /**
   * Locks the counter of every key whose cap a reserve of the batch carries (key id order, the first
   * reserve's cap standing for the key), then reads what each key's held reservations hold.
   */
  async function lockKeyCaps(tx: Queryable, batch: Pending[]): Promise<Map<string, KeyStanding>> {
    const caps = new Map<string, KeyCap>();
    for (const { op } of batch) if (op.kind === 'reserve' && op.cap && op.keyId !== null && !caps.has(op.keyId)) caps.set(op.keyId, op.cap);
    const keys = new Map<string, KeyStanding>();
    if (caps.size === 0) return keys;
    const keyIds = [...caps.keys()].sort();
    for (const keyId of keyIds) keys.set(keyId, { usedNano: await caps.get(keyId)!.lockUsed(tx), heldNano: 0n });
    for (const [keyId, held] of await readHeldByKey(tx, keyIds)) keys.get(keyId)!.heldNano = held;
    return keys;
  }

  /** The failure of an op whose decision broke an invariant, naming the wallet of its reservation as locked. */
  const broke = (p: Pending, book: Book, cause: unknown): Verdict => ({
    kind: 'drop-op',
    owner: p,
    error: new LedgerInvariantBroken(p.op.kind, p.op.id, book.reservation(p.op.id)?.walletId ?? p.op.walletId, cause),
  });

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
