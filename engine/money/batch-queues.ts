// Which of the ledger's ops share a transaction, and when it starts (the transaction itself is batcher.ts's).
//
// PostgreSQL: `walletQueues` FIFO queues (billing.yaml `ledger.queues`, default 1) that the wallets share, a
// wallet always in the same one (by a hash of its id: the wallet of the reserve, or of the reservation being
// finished), and one for the draws of all wallets (DRAWS_QUEUE). When a queue is idle, the first op starts a
// batch in a microtask (so the ops submitted by the same synchronous code go together, and the transaction
// starts before any I/O is handled); while that batch's transaction runs, new ops queue; when it commits, the
// next batch takes everything queued, up to MAX_BATCH ops (MAX_DRAW_BATCH draws), of whichever wallets. So a
// process has at most one transaction in flight per queue, and a wallet's ops wait for the batches ahead of
// them in its queue (FIFO). Why shared queues and not one per wallet: each transaction pays its round trips and
// a commit (a WAL flush) whatever it holds, and calls spread over many wallets took one transaction each, which
// exhausted the pool (docs/benchmarks.md, "Queues the wallets share"). A batch locks its wallets' lots in one statement in `seq` order, as
// the draws' and PGlite's batches always have, so batches of different wallets cannot deadlock.
//
// PGlite runs one transaction at a time, behind a FIFO mutex that plain queries queue on too. There: one
// queue for all wallets, and a batch's transaction is requested the moment an op arrives (unless one is
// already waiting to start); it takes the ops queued when it starts. So an op's transaction is queued before
// any query issued after the call, as with one transaction per op (a balance read right after a settle sees it).
//
// Draws are waited for by the ends of their answers: a queue holding only draws starts its next batch
// `drawFlushMs` (default 0) after its last one started, or once a whole batch of them is queued.
import type { FinishOp, FinishOutcome, ReserveOp, ReserveResult } from './types.ts';

const MAX_BATCH = 64;

/**
 * Draws (budget leases paying calls, written behind the replies) of every wallet share one queue: no call
 * waits on them, so what counts is how many a transaction writes, and a hundred wallets each drawing a few a
 * second would otherwise take a hundred transactions of one draw each. A batch may lock several wallets' lots
 * (in `seq` order, as every batch does).
 */
const DRAWS_QUEUE = '\u0000draws';
/**
 * Most draws one transaction writes. A batch's time is mostly its round trips, each waiting its turn on an
 * event loop busy with calls, so a batch must take many draws for the writes to keep up with the calls (at 64
 * they fell behind under the bench's soak: docs/benchmarks.md, "Queues the wallets share").
 */
const MAX_DRAW_BATCH = 256;
/**
 * Draws wait up to this long after the last draws batch started (billing.yaml `leases.flush_ms`). Default 0:
 * every answer's end waits for its draw, so a batch starts the moment one is queued while none runs, and the
 * next one takes everything that queued during it (group commit: one commit for all the calls that ended
 * meanwhile, so a draw waits about one commit and throughput does not pay per call).
 */
export const DEFAULT_DRAW_FLUSH_MS = 0;

export const DEFAULT_WALLET_QUEUES = 1;

/** The queue a wallet's ops go to on PostgreSQL: always the same one for a wallet while `queues` stays. */
function walletQueueOf(walletId: string | null, queues: number): string {
  if (walletId === null) return '';
  let h = 0;
  for (let i = 0; i < walletId.length; i++) h = (Math.imul(h, 31) + walletId.charCodeAt(i)) | 0;
  return String((h >>> 0) % Math.max(1, Math.floor(queues)));
}

export type Op = ReserveOp | FinishOp;

export interface Pending {
  op: Op;
  resolve: (v: ReserveResult | FinishOutcome) => void;
  reject: (e: unknown) => void;
}

interface Queue {
  pending: Pending[];
  /** Batches started and not ended. */
  running: number;
  /** A batch was started and has not yet taken its ops. */
  waiting: boolean;
  /** Ops queued that are not draws: someone waits for them, so they start a batch at once. */
  urgent: number;
  /** When the last batch started (ms), and the timer that starts the next one when it is due. */
  lastStartMs: number;
  timer?: NodeJS.Timeout | undefined;
}

interface BatchQueueOptions {
  embedded: boolean;
  drawFlushMs: () => number;
  /** How many queues the wallets share on PostgreSQL; read at each op (a reload may change it). */
  walletQueues: () => number;
  /** Runs one batch: its transaction calls `take` when it starts, for the ops it will decide; never throws. */
  runBatch: (take: () => Pending[]) => Promise<void>;
}

/** The ledger's entry: queues an op under its wallet and resolves with its outcome once its batch commits. */
export function batchQueues(opts: BatchQueueOptions): (walletId: string | null, op: Op) => Promise<ReserveResult | FinishOutcome> {
  const { embedded, drawFlushMs, walletQueues, runBatch } = opts;
  const queues = new Map<string, Queue>();

  /** Starts the queue's next batch if one is due and none is waiting to start (on PostgreSQL: none runs). */
  function startWhenDue(key: string, q: Queue): void {
    if (q.waiting || !(embedded || q.running === 0) || q.pending.length === 0) return;
    const wait = q.urgent > 0 || q.pending.length >= MAX_DRAW_BATCH ? 0 : q.lastStartMs + drawFlushMs() - Date.now();
    if (wait > 0) {
      q.timer ??= setTimeout(() => {
        q.timer = undefined;
        startWhenDue(key, q);
      }, wait);
      return;
    }
    clearTimeout(q.timer);
    q.timer = undefined;
    start(key, q);
  }

  function start(key: string, q: Queue): void {
    q.waiting = true;
    q.running++;
    q.lastStartMs = Date.now();
    const take = (): Pending[] => {
      q.waiting = false;
      const batch = q.pending.splice(0, key === DRAWS_QUEUE || embedded ? MAX_DRAW_BATCH : MAX_BATCH);
      for (const p of batch) if (p.op.kind !== 'draw') q.urgent--;
      if (embedded && q.pending.length > 0) startWhenDue(key, q); // more than one batch's worth: queue the next
      return batch;
    };
    void runBatch(take).finally(() => {
      q.running--;
      startWhenDue(key, q);
      // A wallet queue goes when idle; the draws' stays, with the time its last batch started.
      if (q.running === 0 && !q.waiting && q.pending.length === 0 && key !== DRAWS_QUEUE && !embedded) queues.delete(key);
    });
  }

  return (walletId, op) =>
    new Promise((resolve, reject) => {
      const key = embedded ? '' : op.kind === 'draw' ? DRAWS_QUEUE : walletQueueOf(walletId, walletQueues());
      let q = queues.get(key);
      if (!q) queues.set(key, (q = { pending: [], running: 0, waiting: false, urgent: 0, lastStartMs: 0 }));
      q.pending.push({ op, resolve, reject });
      if (op.kind !== 'draw') q.urgent++;
      startWhenDue(key, q);
    });
}
