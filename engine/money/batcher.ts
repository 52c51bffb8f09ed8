// The ledger's money moves, batched: concurrent reserve, settle, release (and the sweeper's expire) calls
// are grouped into one transaction.
//
// Queues (batch-queues.ts): the wallets share billing.yaml's ledger.queues, the draws of all wallets have one,
// and PGlite has one for everything;
// a batch takes what its queue holds when its transaction starts. The wallet id a finish is queued under is
// the caller's word (the Reservation object's, or looked up from the id); the batch checks it against the
// locked reservation row, so a wrong one costs a retry, never money.
//
// One batch = one transaction; one run of it (lock, decide, write) is batch-run.ts's.
// Round trips per batch: BEGIN, lock (plus the holds' read when it finishes reservations), write (the charge rows
// ride in it), one per charge callback, COMMIT (plus one when a reserve is refused, and two when reserves
// carry key caps: the keys' lock, their use and holds; one per group). Lock order is lots (seq) →
// reservations (id) → keys (id; their api_keys rows) → groups (id) → wallet row → whatever the charge rows touch, the
// same for every batch in every process (the sweeper's expires are batches too; extend locks one
// reservation row, a top-up its wallet row and a new lot), so batches do not deadlock each other; when
// they do anyway (two charge callbacks writing the same rows in different orders), the batch is retried.
//
// Failure of one op fails only that op:
//   - decided in memory (no such reservation / wallet): the op rejects, it wrote nothing, the others go on;
//   - its decision finds the rows inconsistent (a lot would go negative, a hold on a lot that is not live:
//     a bug, or a row changed by hand): the op rejects with LedgerInvariantBroken, for the caller to log,
//     and the batch is decided again without it (the Book may hold part of its moves). Nothing is written
//     before the decisions end (the keys' and groups' locks before them change nothing and are taken again).
//     One broken reservation must not stop the other wallets' moves, nor the sweeper's expiries, that share
//     its batch;
//   - charge rows that throw: the batch's writes are undone and the batch runs again without that op
//     (when a grouped row write throws, first again with each op's rows written on their own, to find it),
//     which rejects with the rows' error (its reservation stays held and uncharged). The others are
//     decided again from the undone state, as if the failed op had never been sent (what one transaction
//     per op gave). Their charge rows may thus be written twice, the first run undone (a deadlock retry always
//     could).
//   - a deadlock/serialization failure anywhere: the whole batch is retried (up to MAX_RETRIES); so are
//     charge rows that failed on such an error, on PostgreSQL, before their op is failed.
//   - a row lock waited for past LOCK_WAIT_MS (retry.ts; another session holds a wallet's rows): the batch runs
//     again as one batch per wallet, at once, so only the locked wallet's ops fail (with 55P03).
//
// Each run of a batch (processBatch) ends in a verdict (batch-verdict.ts, which says how a run is undone on
// PostgreSQL and on PGlite), never a thrown one; BatchRun below is one loop over them.
import type { Clock } from '../core/clock.ts';
import type { Db, Queryable } from '../db/db.ts';
import { batchQueues, DEFAULT_DRAW_FLUSH_MS, DEFAULT_WALLET_QUEUES, type Pending } from './batch-queues.ts';
import { processBatch, type RunContext } from './batch-run.ts';
import { type Outcome, type RunAgain, RunAgainOutside, runAgainFor, type Verdict } from './batch-verdict.ts';
import { assertMoney } from './invariants.ts';
import { backoff, isLockTimeout, isRetryable, LOCK_WAIT_MS, MAX_RETRIES, TablesLocked } from './retry.ts';
import type { FinishOp, FinishOutcome, ReserveOp, ReserveResult } from './types.ts';

/** How the ledger's moves are queued and committed; each is read at each use, so a reload applies to the next. */
export interface BatchSettings {
  /** How long draws wait to be written together (billing.yaml `leases.flush_ms`; DEFAULT_DRAW_FLUSH_MS). */
  drawFlushMs?: () => number;
  /** How many queues the wallets' moves share on PostgreSQL (billing.yaml `ledger.queues`; DEFAULT_WALLET_QUEUES). */
  walletQueues?: () => number;
  /** Whether a batch's COMMIT waits for PostgreSQL's disk flush (billing.yaml `ledger.synchronous_commit`); default true. */
  flushWal?: () => boolean;
  /** Observes each batch transaction attempt with its number of ops (tests). */
  onBatch?: (size: number) => void;
}

interface BatcherOptions extends BatchSettings {
  db: Db;
  clock: Clock;
  /** Owner written on new reservations. */
  owner: string;
  /** The plan-restricted vendors (not_in_plan), read when a batch decides a refusal. */
  planVendors: () => readonly string[];
}

interface Batcher {
  reserve(op: ReserveOp): Promise<ReserveResult>;
  finish(op: FinishOp): Promise<FinishOutcome>;
  /** PGlite: one queue for all wallets, so a finish needs no wallet id. */
  readonly embedded: boolean;
}

export function createBatcher(opts: BatcherOptions): Batcher {
  const embedded = opts.db.kind === 'pglite';
  const runAgain = runAgainFor(opts.db.kind);
  const submit = batchQueues({
    embedded,
    drawFlushMs: opts.drawFlushMs ?? (() => DEFAULT_DRAW_FLUSH_MS),
    walletQueues: opts.walletQueues ?? (() => DEFAULT_WALLET_QUEUES),
    runBatch: (take) => new BatchRun(opts, runAgain, take).run(),
  });
  return {
    embedded,
    reserve: (op) => submit(op.walletId, op) as Promise<ReserveResult>,
    finish: (op) => submit(op.walletId, op) as Promise<FinishOutcome>,
  };
}

/**
 * One batch, run to its end: its transaction takes the queued ops when it starts (`take`); every op's promise is
 * settled; it never throws. One loop over the runs' verdicts: a verdict other than `done` is undone (runAgain)
 * and acted on, inside the transaction (PGlite) or after rolling it back (PostgreSQL), and the batch runs again;
 * outside, charge rows that failed on a retryable error are first retried as they were.
 */
class BatchRun {
  private active: Pending[] | null = null;
  private attempt = 0;
  private readonly extraWallets = new Set<string>();
  /** After a grouped write of charge rows failed: each charge's rows on their own, to find whose they were. */
  private separately = false;
  private runs = 0;
  private taken = 0;
  private readonly ctx: RunContext;

  constructor(
    private readonly opts: BatcherOptions,
    private readonly runAgain: RunAgain,
    private readonly take: () => Pending[],
  ) {
    this.ctx = { clock: opts.clock, owner: opts.owner, planVendors: opts.planVendors };
  }

  async run(): Promise<void> {
    for (; ; this.counted()) {
      let outcomes: Outcome[];
      try {
        outcomes = await this.opts.db.transaction((tx) => this.inTransaction(tx), {
          flushWal: this.opts.flushWal?.() ?? true,
          lockTimeoutMs: LOCK_WAIT_MS,
        });
      } catch (e) {
        if (await this.goesOnAfter(e)) continue;
        return;
      }
      this.active!.forEach((p, i) => {
        const o = outcomes[i]!; // one outcome per operation of the batch
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
      return;
    }
  }

  /**
   * Each run again drops an op, locks more wallets, turns to separate rows once or retries a deadlock: a batch of
   * n ops runs at most 2n + 2 MAX_RETRIES + 3 times. Past that the verdicts contradict each other (a bug).
   */
  private counted(): void {
    const { runs, taken } = this;
    assertMoney(
      ++this.runs <= 2 * taken + 2 * MAX_RETRIES + 3,
      () => `ledger: a batch of ${taken} ops ran ${runs + 1} times without an end`,
    );
  }

  private async inTransaction(tx: Queryable): Promise<Outcome[]> {
    if (this.active === null) {
      // PGlite works on this thread, mostly in microtasks: without a pause here a batch would start and end
      // before the event loop read the next request, one op per transaction. So let the pending I/O run first
      // (holding our place: later queries queue behind this transaction).
      if (this.opts.db.kind === 'pglite') await new Promise((r) => setImmediate(r));
      this.active = this.take();
      this.taken = this.active.length;
    }
    for (; ; this.counted()) {
      const active: Pending[] = this.active;
      if (active.length === 0) {
        if (this.opts.db.kind !== 'pglite') this.opts.onBatch?.(0); // PostgreSQL counts an empty take as an attempt
        return [];
      }
      this.opts.onBatch?.(active.length);
      const marked = await this.runAgain.begin(tx, active);
      const v = await processBatch(this.ctx, tx, active, { extraWallets: this.extraWallets, separately: this.separately });
      if (v.kind === 'done') return v.outcomes;
      await this.runAgain.undo(tx, marked, v); // PostgreSQL: throws RunAgainOutside, rolling back
      this.rerunAfter(v);
    }
  }

  /** After the transaction threw: whether the batch runs again (else every op it took has failed). */
  private async goesOnAfter(e: unknown): Promise<boolean> {
    this.active ??= this.take(); // it failed before it started (no connection): fail what it would have taken
    if (e instanceof RunAgainOutside) {
      const v = e.verdict;
      if (v.kind === 'rows-failed' && isRetryable(v.error) && this.attempt < MAX_RETRIES) await backoff(this.attempt++);
      else this.rerunAfter(v);
      return this.active.length > 0;
    }
    if (isRetryable(e) && this.attempt < MAX_RETRIES) {
      await backoff(this.attempt++);
      return true;
    }
    const wallets = new Map<string | null, Pending[]>();
    for (const p of this.active) wallets.set(p.op.walletId, [...(wallets.get(p.op.walletId) ?? []), p]);
    if (isLockTimeout(e) && wallets.size > 1) {
      // Some wallet's rows are held locked by another session: each wallet's ops run again as a batch of their
      // own, all at once (decided anew, as after a deadlock), so the others land now and only the locked
      // wallet's wait LOCK_WAIT_MS again, then fail. The queue's next batch waits for them all.
      await Promise.all([...wallets.values()].map((ops) => new BatchRun(this.opts, this.runAgain, () => ops).run()));
      return false;
    }
    const [walletId] = wallets.keys();
    const cause = isLockTimeout(e) && walletId && !(await walletRowsLocked(this.opts.db, walletId)) ? new TablesLocked(e) : e;
    for (const p of this.active) p.reject(cause);
    return false;
  }

  /** Acts on a verdict that runs the batch again: what it runs again with. */
  private rerunAfter(v: Exclude<Verdict, { kind: 'done' }>): void {
    if (v.kind === 'lock-more-wallets') for (const id of v.walletIds) this.extraWallets.add(id);
    else if (v.kind === 'rows-failed' && v.grouped) this.separately = true;
    else {
      // This op alone fails; the others are decided again without it, from the undone state.
      v.owner.reject(v.error);
      this.active = this.active!.filter((p) => p !== v.owner);
    }
  }
}

/**
 * Whether a wallet's own rows are what a lock wait was for (another session holds them), rather than a table every
 * batch writes (a `LOCK TABLE`, a migration): only then may the other wallets' calls go on (charge-writer.ts).
 */
async function walletRowsLocked(db: Db, walletId: string): Promise<boolean> {
  try {
    await db.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE NOWAIT', [walletId]);
      await tx.query('SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE NOWAIT', [walletId]);
    });
    return false;
  } catch (e) {
    return isLockTimeout(e); // NOWAIT fails with the same lock_not_available
  }
}
