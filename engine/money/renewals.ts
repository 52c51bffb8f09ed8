// This process's holds (leases, calls' own) renewed in one statement a tick, so only a dead process's expire.
import type { Ledger, MoneyLog } from './types.ts';

interface Kept {
  ttlMs: number;
  /** Past this instant (ms) it is no longer renewed, needed or not: a hold whose call was lost then expires. */
  untilMs: number;
  /** Asked at each renewal: false skips this one (the hold is kept, to be asked again). */
  needed: () => boolean;
  /** Told once the hold was found no longer held (swept, or finished elsewhere); it is then forgotten. */
  lost: () => void;
}

/** The shortest renewal interval, whatever a hold's life: a setting of a few ms must not spin the process. */
const MIN_TICK_MS = 100;

export class HoldRenewals {
  private readonly kept = new Map<string, Kept>();
  private timer: NodeJS.Timeout | null = null;
  private tickMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly ledger: Pick<Ledger, 'extendAll'>,
    private readonly now: () => Date,
    private readonly log: Pick<MoneyLog, 'warn'>,
  ) {}

  /** Renews the held reservation `id` (a life of `ttlMs`) until the returned stop is called or `maxMs` passed. */
  keep(id: string, ttlMs: number, opts: Partial<Pick<Kept, 'needed' | 'lost'>> & { maxMs?: number }): () => void {
    const kept: Kept = {
      ttlMs,
      untilMs: Date.now() + (opts.maxMs ?? Number.POSITIVE_INFINITY),
      needed: opts.needed ?? (() => true),
      lost: opts.lost ?? (() => undefined),
    };
    this.kept.set(id, kept);
    this.schedule();
    return () => {
      if (this.kept.get(id) === kept) this.kept.delete(id);
      if (this.kept.size === 0) this.stop();
    };
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.tickMs = Number.POSITIVE_INFINITY;
  }

  private schedule(): void {
    let shortest = Number.POSITIVE_INFINITY;
    for (const k of this.kept.values()) shortest = Math.min(shortest, k.ttlMs);
    const tickMs = Math.max(MIN_TICK_MS, shortest / 3);
    if (this.timer && tickMs >= this.tickMs) return;
    this.stop();
    this.tickMs = tickMs;
    this.timer = setInterval(() => void this.renew(), tickMs);
    this.timer.unref();
  }

  /** One statement per hold life in use (one, as shipped); a failed one is tried again at the next tick. */
  private async renew(): Promise<void> {
    const byTtl = new Map<number, string[]>();
    for (const [id, k] of this.kept) {
      if (Date.now() > k.untilMs) this.kept.delete(id);
      else if (k.needed()) byTtl.set(k.ttlMs, [...(byTtl.get(k.ttlMs) ?? []), id]);
    }
    if (this.kept.size === 0) return this.stop();
    for (const [ttlMs, ids] of byTtl) {
      try {
        const held = await this.ledger.extendAll(ids, new Date(this.now().getTime() + ttlMs));
        for (const id of ids) if (!held.has(id)) this.forgetLost(id);
      } catch (e) {
        this.log.warn({ err: e, holds: ids.length }, 'holds not renewed; trying again');
      }
    }
  }

  private forgetLost(id: string): void {
    const k = this.kept.get(id);
    this.kept.delete(id);
    k?.lost();
  }
}
