// Settles that could not be written when the call ended (the database was down or restarting) are tried
// again in the background until they land. The answer already went to the client, so the vendor's work is
// owed: dropping the settle would leave the hold to the sweeper, which releases it and makes the answer free.
// A settle is idempotent and an expired hold can still be settled late (money/policy.ts), so retrying is safe
// whenever it lands. What a process still has pending when it is killed is lost: the bound is the settles of
// the calls that ended while the database was unreachable (logged at each failure, counted by `size`).
import type { FastifyBaseLogger } from 'fastify';

export interface LateSettlementOptions {
  /** The first retry waits this long; each next one twice as long, up to maxDelayMs. */
  firstDelayMs?: number;
  maxDelayMs?: number;
}

interface Pending {
  callId: string;
  attempt: () => Promise<unknown>;
  delayMs: number;
  timer: NodeJS.Timeout | null;
  running: boolean;
}

export class LateSettlements {
  private readonly pending = new Set<Pending>();
  private readonly firstDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(
    private readonly log: Pick<FastifyBaseLogger, 'warn' | 'info' | 'error'>,
    opts: LateSettlementOptions = {},
  ) {
    this.firstDelayMs = opts.firstDelayMs ?? 250;
    this.maxDelayMs = opts.maxDelayMs ?? 5_000;
  }

  /** Settles still waiting for the database. */
  get size(): number {
    return this.pending.size;
  }

  /** Keeps trying `attempt` until it succeeds (or the process stops). */
  add(callId: string, attempt: () => Promise<unknown>): void {
    const p: Pending = { callId, attempt, delayMs: this.firstDelayMs, timer: null, running: false };
    this.pending.add(p);
    this.log.warn({ callId, pending: this.pending.size }, 'settlement deferred until the database answers');
    this.schedule(p, p.delayMs);
  }

  /** At shutdown: tries every pending settle now and waits up to `timeoutMs` for them; logs what is left. */
  async drain(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.pending.size > 0 && Date.now() < deadline) {
      await Promise.all([...this.pending].map((p) => this.tryNow(p)));
      if (this.pending.size > 0) await new Promise((r) => setTimeout(r, Math.min(200, Math.max(0, deadline - Date.now()))));
    }
    for (const p of this.pending) {
      if (p.timer) clearTimeout(p.timer);
      this.log.error({ callId: p.callId }, 'settlement lost at shutdown: the database did not answer');
    }
    const left = this.pending.size;
    this.pending.clear();
    return left;
  }

  private schedule(p: Pending, delayMs: number): void {
    p.timer = setTimeout(() => void this.tryNow(p), delayMs);
    p.timer.unref?.();
  }

  private async tryNow(p: Pending): Promise<void> {
    if (!this.pending.has(p) || p.running) return;
    if (p.timer) clearTimeout(p.timer);
    p.timer = null;
    p.running = true;
    try {
      await p.attempt();
      if (!this.pending.delete(p)) return;
      this.log.info({ callId: p.callId }, 'deferred settlement written');
    } catch {
      if (!this.pending.has(p)) return;
      p.delayMs = Math.min(p.delayMs * 2, this.maxDelayMs);
      this.schedule(p, p.delayMs);
    } finally {
      p.running = false;
    }
  }
}
