// The ledger's moves in batch transactions (which ops share one: batch-queues.ts; one run: batch-run.ts; the one lock
// order: docs/decisions/ledger-exactness.md). A batch that cannot commit whole reruns each op alone, so an op fails
// only for its own fault.
import type { Db } from '../db/db.ts';
import { batchQueues, DEFAULT_DRAW_FLUSH_MS, DEFAULT_WALLET_QUEUES, type Pending } from './batch-queues.ts';
import { type Outcome, processBatch, type RunContext } from './batch-run.ts';
import { backoff, isLockTimeout, isRetryable, LOCK_WAIT_MS, MAX_RETRIES, TablesLocked } from './retry.ts';
import type { FinishOp, FinishOutcome, ReserveOp, ReserveResult } from './types.ts';

/** Each is read at each use, so a reload applies to the next batch. */
export interface BatchSettings {
  /** How long draws wait to be written together (billing.yaml `leases.flush_ms`). */
  drawFlushMs?: () => number;
  /** How many queues the wallets' moves share on PostgreSQL (billing.yaml `ledger.queues`). */
  walletQueues?: () => number;
  /** Whether a batch's COMMIT waits for PostgreSQL's disk flush (billing.yaml `ledger.synchronous_commit`); default true. */
  flushWal?: () => boolean;
  /** Observes each batch transaction attempt with its number of ops (tests). */
  onBatch?: (size: number) => void;
}

interface BatcherOptions extends BatchSettings, RunContext {
  db: Db;
}

export function createBatcher(opts: BatcherOptions) {
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
    /** PGlite: one queue for all wallets, so a finish needs no wallet id. */
    embedded,
    reserve: (op: ReserveOp) => submit(op) as Promise<ReserveResult>,
    finish: (op: FinishOp) => submit(op) as Promise<FinishOutcome>,
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
 * Settles every op the batch takes, once; never throws. A wallet whose rows stayed locked past LOCK_WAIT_MS joins
 * `locked` (its ops then queue apart, so other wallets' batches stop waiting on it) until one of its ops commits.
 */
async function runBatch(opts: BatcherOptions, ctx: RunContext, locked: Set<string>, take: () => Pending[]): Promise<void> {
  const { ops, ended } = await runAgainIfLetGo(opts, ctx, take, false);
  if (ended.ok) {
    if (locked.size > 0) for (const p of ops) if (p.op.walletId !== null) locked.delete(p.op.walletId);
    return settleAll(ops, ended.outcomes);
  }
  const wallets = new Set(ops.map((p) => p.op.walletId));
  if (ended.own || (isLockTimeout(ended.error) && wallets.size > 1)) return runEachAlone(opts, ctx, locked, ops);
  const [walletId = null] = wallets;
  const cause = isLockTimeout(ended.error) ? await lockTimeoutCause(opts.db, locked, walletId, ended.error) : ended.error;
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
      const { ended } = await runAgainIfLetGo(opts, ctx, () => [p], true);
      if (ended.ok) {
        if (walletId !== null) locked.delete(walletId);
        settleAll([p], ended.outcomes);
        continue;
      }
      const cause = isLockTimeout(ended.error) ? await lockTimeoutCause(opts.db, locked, walletId, ended.error) : ended.error;
      if (isLockTimeout(ended.error)) lockedCause = cause;
      p.reject(cause);
    }
  };
  await Promise.all([...byWallet].map(runWallet));
}

/** How often a batch runs again after its lock wait ended on one wallet's rows, found free since. */
const LET_GO_RERUNS = 2;

/**
 * A lock wait that ended with the wallet's rows free again was a slow holder (a process descheduled between two
 * statements on a busy machine), not a stuck one: the batch runs again rather than failing its calls with 503s.
 */
async function runAgainIfLetGo(opts: BatcherOptions, ctx: RunContext, take: () => Pending[], alone: boolean) {
  const first = await runInOne(opts, ctx, take, alone);
  const { ops } = first;
  let { ended } = first;
  for (let rerun = 0; rerun < LET_GO_RERUNS && (await letGoSince(opts.db, ops, ended)); rerun++) {
    ({ ended } = await runInOne(opts, ctx, () => ops, alone));
  }
  return { ops, ended };
}

/** The batch ended waiting on one wallet's lock, that wallet's rows are free now, and no table lock stops writes. */
async function letGoSince(db: Db, ops: readonly Pending[], ended: Ended): Promise<boolean> {
  if (ended.ok || !isLockTimeout(ended.error)) return false;
  const wallets = new Set(ops.map((p) => p.op.walletId));
  const [walletId = null] = wallets;
  if (wallets.size !== 1 || walletId === null) return false;
  return !(await tablesLockedForWrites(db)) && !(await walletRowsLocked(db, walletId));
}

/** The ops `take` gives, taken when the transaction starts, in one transaction retried after a deadlock. */
async function runInOne(
  opts: BatcherOptions,
  ctx: RunContext,
  take: () => Pending[],
  alone: boolean,
): Promise<{ ops: Pending[]; ended: Ended }> {
  let ops: Pending[] | null = null;
  for (let attempt = 0; ; attempt++) {
    try {
      const run = await opts.db.transaction(
        async (tx) => {
          if (ops === null) {
            // PGlite works on this thread, mostly in microtasks: without a pause here a batch would start and end
            // before the event loop read the next request, one op per transaction.
            if (opts.db.kind === 'pglite') await new Promise((r) => setImmediate(r));
            ops = take();
          }
          opts.onBatch?.(ops.length);
          if (ops.length === 0) return null;
          const v = await processBatch(ctx, tx, ops, alone);
          if (v.kind === 'failed') throw new RunFailed(v.error);
          return v;
        },
        { flushWal: opts.flushWal?.() ?? true, lockTimeoutMs: LOCK_WAIT_MS, genericPlans: true },
      );
      return { ops: ops ?? [], ended: { ok: true, outcomes: run?.outcomes ?? [] } };
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
 * TablesLocked when another session holds a table lock that stops the ledger's writes (an outage for all), else
 * 55P03: the wallet's own rows were locked, so only its calls wait (it joins `locked`).
 */
async function lockTimeoutCause(db: Db, locked: Set<string>, walletId: string | null, e: unknown): Promise<unknown> {
  if (await tablesLockedForWrites(db)) return new TablesLocked(e);
  if (walletId !== null) locked.add(walletId);
  return e;
}

/** The tables a batch writes, in the gateway's own schema: a lock elsewhere in the database stops none of them. */
const LEDGER_TABLES = [
  'wallets',
  'credit_lots',
  'reservations',
  'reservation_lots',
  'reservation_draws',
  'ledger_journal',
  'usage_records',
  'usage_daily',
  'vendor_responses',
  'api_keys',
  'key_groups',
];

// Table locks that conflict with a write's ROW EXCLUSIVE (LOCK TABLE, most DDL, a CREATE INDEX), held by another session.
const TABLE_LOCK_SQL = `
SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
  WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid() AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1::text[])
    AND l.mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')) AS locked`;

async function tablesLockedForWrites(db: Db): Promise<boolean> {
  return (await db.query<{ locked: boolean }>(TABLE_LOCK_SQL, [LEDGER_TABLES])).rows[0]?.locked === true;
}

/** How long the look at a wallet's rows waits for their tables: NOWAIT covers the rows, not a table lock taken since. */
const LOOK_WAIT_MS = 50;

/** Whether another session holds the wallet's own rows (or took a table lock since): a lock not yet let go. */
async function walletRowsLocked(db: Db, walletId: string): Promise<boolean> {
  try {
    await db.transaction(
      async (tx) => {
        await tx.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE NOWAIT', [walletId]);
        await tx.query('SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE NOWAIT', [walletId]);
      },
      { lockTimeoutMs: LOOK_WAIT_MS },
    );
    return false;
  } catch (e) {
    return isLockTimeout(e); // NOWAIT fails with the same lock_not_available
  }
}
