// Which ledger ops share a transaction, and when it starts: queues the wallets share, since each transaction pays
// its round trips and a commit whatever it holds (docs/decisions/ledger-exactness.md, "The batch queues").
import type { FinishOp, FinishOutcome, ReserveOp, ReserveResult } from './types.ts';

const MAX_BATCH = 64;

/** The draws of every wallet share one queue: what counts for them is how many a transaction writes. */
const DRAWS_QUEUE = '\u0000draws';
/** Most draws one transaction writes: fewer fell behind the calls (docs/benchmarks.md, "Queues the wallets share"). */
const MAX_DRAW_BATCH = 256;
/** Draws wait this long after the last draws batch started (billing.yaml `leases.flush_ms`): 0, as every answer waits for its draw. */
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
  walletQueues: () => number;
  /** Runs one batch: its transaction calls `take` when it starts, for the ops it will decide; never throws. */
  runBatch: (take: () => Pending[]) => Promise<void>;
  /** A wallet whose rows another session holds locked: its ops queue on their own, so no other wallet's batch waits on them. */
  apart: (walletId: string) => boolean;
}

/** The ledger's entry: queues an op under its wallet and resolves with its outcome once its batch commits. */
export function batchQueues(opts: BatchQueueOptions): (op: Op) => Promise<ReserveResult | FinishOutcome> {
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

  return (op) =>
    new Promise((resolve, reject) => {
      const key = embedded
        ? ''
        : op.walletId !== null && opts.apart(op.walletId)
          ? `\u0001${op.walletId}`
          : op.kind === 'draw'
            ? DRAWS_QUEUE
            : walletQueueOf(op.walletId, walletQueues());
      let q = queues.get(key);
      if (!q) queues.set(key, (q = { pending: [], running: 0, waiting: false, urgent: 0, lastStartMs: 0 }));
      q.pending.push({ op, resolve, reject });
      if (op.kind !== 'draw') q.urgent++;
      startWhenDue(key, q);
    });
}
