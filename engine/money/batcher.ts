// The ledger's money moves, batched: concurrent reserves and finishes are grouped into one transaction (which ops
// share one, and when it starts: batch-queues.ts; one run of it: batch-run.ts). Every batch locks lots (seq) →
// reservations (id) → keys (id) → groups (id) → whatever the charge rows touch, in every process, so batches do
// not deadlock each other; when they do anyway, the batch is tried again (retry.ts).
//
// A batch that cannot commit as a whole (a decision that finds the rows inconsistent, charge rows the database
// refuses, a finish naming the wrong wallet, a wallet's rows locked past LOCK_WAIT_MS) is rolled back and each of
// its ops runs again alone, in its own transaction: a wallet's ops in their order, the wallets side by side. So an
// op fails only for its own fault, the others decided as if it had never been sent; a wallet whose rows stay
// locked fails its remaining ops at once rather than waiting again for each.
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import { batchQueues, DEFAULT_DRAW_FLUSH_MS, DEFAULT_WALLET_QUEUES, type Pending } from './batch-queues.ts';
import { type Outcome, processBatch, type RunContext } from './batch-run.ts';
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
  const ctx: RunContext = { clock: opts.clock, owner: opts.owner, planVendors: opts.planVendors };
  const locked = new Set<string>();
  const submit = batchQueues({
    embedded,
    drawFlushMs: opts.drawFlushMs ?? (() => DEFAULT_DRAW_FLUSH_MS),
    walletQueues: opts.walletQueues ?? (() => DEFAULT_WALLET_QUEUES),
    runBatch: (take) => runBatch(opts, ctx, locked, take),
    apart: (walletId) => locked.has(walletId),
  });
  return {
    embedded,
    reserve: (op) => submit(op.walletId, op) as Promise<ReserveResult>,
    finish: (op) => submit(op.walletId, op) as Promise<FinishOutcome>,
  };
}

/** A run that could not commit as a whole, thrown to roll its transaction back. */
class RunFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('ledger batch failed as a whole', { cause });
  }
}

/** `own`: the run found a fault of its ops' (not a lost connection or an outage), which running them alone isolates. */
type Ended = { ok: true; outcomes: Outcome[] } | { ok: false; error: unknown; own: boolean };

/**
 * One batch to its end: every op its transaction takes (`take`) is settled once; it never throws. A wallet whose rows
 * stayed locked past LOCK_WAIT_MS joins `locked` (its ops then queue apart) until one of its ops commits.
 */
async function runBatch(opts: BatcherOptions, ctx: RunContext, locked: Set<string>, take: () => Pending[]): Promise<void> {
  const { ops, ended } = await runInOne(opts, ctx, take, false);
  if (ended.ok) {
    if (locked.size > 0) for (const p of ops) if (p.op.walletId !== null) locked.delete(p.op.walletId);
    return settleAll(ops, ended.outcomes);
  }
  const wallets = new Set(ops.map((p) => p.op.walletId));
  if (ended.own || (isLockTimeout(ended.error) && wallets.size > 1)) return runEachAlone(opts, ctx, locked, ops);
  const [walletId = null] = wallets;
  const cause = isLockTimeout(ended.error) ? await lockTimeoutCause(opts.db, walletId, ended.error) : ended.error;
  if (walletId !== null && isLockTimeout(cause)) locked.add(walletId);
  for (const p of ops) p.reject(cause);
}

/** Each op again in a transaction of its own: a wallet's in their order, the wallets side by side. */
async function runEachAlone(opts: BatcherOptions, ctx: RunContext, locked: Set<string>, ops: readonly Pending[]): Promise<void> {
  const byWallet = new Map<string | null, Pending[]>();
  for (const p of ops) byWallet.set(p.op.walletId, [...(byWallet.get(p.op.walletId) ?? []), p]);
  const runWallet = async ([walletId, walletOps]: [string | null, Pending[]]) => {
    let lockedCause: unknown = null;
    for (const p of walletOps) {
      if (lockedCause !== null) {
        p.reject(lockedCause);
        continue;
      }
      const { ended } = await runInOne(opts, ctx, () => [p], true);
      if (ended.ok) {
        if (walletId !== null) locked.delete(walletId);
        settleAll([p], ended.outcomes);
        continue;
      }
      const cause = isLockTimeout(ended.error) ? await lockTimeoutCause(opts.db, walletId, ended.error) : ended.error;
      if (isLockTimeout(ended.error)) lockedCause = cause;
      if (walletId !== null && isLockTimeout(cause)) locked.add(walletId);
      p.reject(cause);
    }
  };
  await Promise.all([...byWallet].map(runWallet));
}

/**
 * Runs the ops `take` gives in one transaction (taken when it starts), again after a deadlock, MAX_RETRIES times at
 * most: their outcomes, or why it could not commit.
 */
async function runInOne(
  opts: BatcherOptions,
  ctx: RunContext,
  take: () => Pending[],
  alone: boolean,
): Promise<{ ops: Pending[]; ended: Ended }> {
  let ops: Pending[] | null = null;
  for (let attempt = 0; ; attempt++) {
    try {
      const outcomes = await opts.db.transaction(
        async (tx) => {
          if (ops === null) {
            // PGlite works on this thread, mostly in microtasks: without a pause here a batch would start and end
            // before the event loop read the next request, one op per transaction.
            if (opts.db.kind === 'pglite') await new Promise((r) => setImmediate(r));
            ops = take();
          }
          opts.onBatch?.(ops.length);
          if (ops.length === 0) return [];
          const v = await processBatch(ctx, tx, ops, alone);
          if (v.kind === 'failed') throw new RunFailed(v.error);
          return v.outcomes;
        },
        { flushWal: opts.flushWal?.() ?? true, lockTimeoutMs: LOCK_WAIT_MS },
      );
      return { ops: ops ?? [], ended: { ok: true, outcomes } };
    } catch (e) {
      ops ??= take(); // it failed before it started (no connection): fail what it would have taken
      if (isRetryable(e) && attempt < MAX_RETRIES) await backoff(attempt);
      else return { ops, ended: { ok: false, error: e instanceof RunFailed ? e.cause : e, own: e instanceof RunFailed } };
    }
  }
}

function settleAll(ops: readonly Pending[], outcomes: readonly Outcome[]): void {
  ops.forEach((p, i) => {
    const o = outcomes[i]!; // one outcome per op of the batch
    if (o.ok) p.resolve(o.value);
    else p.reject(o.error);
  });
}

/**
 * A lock waited for too long on a wallet's own rows stays 55P03 (only that wallet's calls wait); one on a table
 * every charge writes (a `LOCK TABLE`, a migration) is TablesLocked, so the charge writer treats it as an outage.
 */
async function lockTimeoutCause(db: Db, walletId: string | null, e: unknown): Promise<unknown> {
  return walletId && !(await walletRowsLocked(db, walletId)) ? new TablesLocked(e) : e;
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
