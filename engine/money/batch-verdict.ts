// What one run of a ledger batch ends in, as a value rather than a throw, so the caller decides what runs next;
// only a real failure (a deadlock, a lost connection, a bug) is thrown.
import type { Queryable } from '../db/db.ts';
import type { Pending } from './batch-queues.ts';
import type { FinishOutcome, ReserveResult } from './types.ts';

export type Outcome = { ok: true; value: ReserveResult | FinishOutcome } | { ok: false; error: unknown };

export type Verdict =
  /** Every op decided and written: COMMIT, then settle each op with its outcome. */
  | { kind: 'done'; outcomes: Outcome[] }
  /** The batch finishes reservations of wallets whose lots it did not lock: run it again locking them too. */
  | { kind: 'lock-more-wallets'; walletIds: string[] }
  /** One op's decision broke an invariant: it fails with `error`, the batch is decided again without it. */
  | { kind: 'drop-op'; owner: Pending; error: Error }
  /** A grouped write of charge rows failed: run again writing each charge's rows on their own, to find whose. */
  | { kind: 'rows-failed'; grouped: true; error: unknown }
  /** The rows of one charge failed: it fails with `error`, the batch runs again without it. */
  | { kind: 'rows-failed'; grouped: false; owner: Pending; error: unknown };

/** A verdict that runs the batch again in a new transaction: thrown to roll this one back, caught outside it. */
export class RunAgainOutside extends Error {
  constructor(readonly verdict: Exclude<Verdict, { kind: 'done' }>) {
    super(`ledger batch runs again: ${verdict.kind}`);
  }
}

/**
 * How a batch that must run again undoes its run, chosen once by the database's kind. `begin` is called
 * before each run inside a transaction and returns whether it marked a point to go back to; `undo`, after a
 * run whose verdict is not `done`, either undoes the run and returns (the batch runs again inside this
 * transaction) or throws RunAgainOutside (the transaction is rolled back, the batch runs again in a new one).
 */
export interface RunAgain {
  begin(tx: Queryable, batch: readonly Pending[]): Promise<boolean>;
  undo(tx: Queryable, marked: boolean, verdict: Exclude<Verdict, { kind: 'done' }>): Promise<void>;
}

/**
 * PostgreSQL: the transaction is rolled back and the batch runs again in a new one (the wallet's next batch
 * waits for it). No savepoint round trip on the hot path.
 */
const newTransaction: RunAgain = {
  begin: async () => false,
  undo: async (_tx, _marked, verdict) => {
    throw new RunAgainOutside(verdict);
  },
};

/**
 * PGlite: the batch runs again inside the same transaction, as another transaction would queue behind the
 * next batch's and the order would not hold. A verdict reached before anything was written (more wallets to
 * lock, a broken decision) needs no undoing; charge rows that failed go back to a savepoint taken at the
 * run's start when it has charge rows to write.
 */
const sameTransaction: RunAgain = {
  async begin(tx, batch) {
    const marked = batch.some((p) => (p.op.kind === 'settle' || p.op.kind === 'draw') && p.op.rows);
    if (marked) await tx.query('SAVEPOINT ledger_batch');
    return marked;
  },
  async undo(tx, marked, verdict) {
    if (verdict.kind === 'lock-more-wallets' || verdict.kind === 'drop-op') return; // nothing written yet
    if (!marked) throw new RunAgainOutside(verdict);
    await tx.query('ROLLBACK TO SAVEPOINT ledger_batch');
  },
};

export const runAgainFor = (kind: 'postgres' | 'pglite'): RunAgain => (kind === 'pglite' ? sameTransaction : newTransaction);
