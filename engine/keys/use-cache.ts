// What a limited key used today and this month, as this process knows it, so a quota check needs no database read.
// The figure only grows and never counts a charge twice, which makes it safe for the monthly limit's early refusal;
// a daily limit is read each call (docs/decisions/key-changes.md, "The use cache").
import { LRUCache } from 'lru-cache';
import { koreanDate, koreanMonth } from '../core/clock.ts';

export interface KeyUsage {
  dayNano: bigint;
  monthNano: bigint;
}

interface Figure extends KeyUsage {
  day: string;
  month: string;
  /** Which read this figure comes from: a charge adds to it only if it was admitted on the same one. */
  read: number;
  readAtMs: number;
}

/** When a charge was admitted, as `note` compares it: the read its key's figure came from. */
export type UseToken = number;

interface KeyUseCacheOptions {
  /** Reads a key's use on the Korean day and month of `now` (key-use.ts). */
  read: (keyId: string, now: Date) => Promise<KeyUsage>;
  /** How old a figure may be before a check reads it again in the background. Default 1 000 ms. */
  ttlMs?: number;
  /** Most keys kept. Default 10 000. */
  max?: number;
}

export class KeyUseCache {
  private readonly figures: LRUCache<string, Figure>;
  /** Reads in flight, one per key. */
  private readonly reading = new Map<string, Promise<void>>();
  /** Keys with a charge committed that the figure may lack: their next check reads first. */
  private readonly behind = new Set<string>();
  private reads = 0;
  /** Counts `forget` calls: a read that started before one is not kept. */
  private forgets = 0;
  private readonly ttlMs: number;

  constructor(private readonly opts: KeyUseCacheOptions) {
    this.ttlMs = opts.ttlMs ?? 1_000;
    this.figures = new LRUCache({ max: opts.max ?? 10_000 });
  }

  /** The key's use on the Korean day and month of `now`: from memory, read first only when this process has none. */
  async get(keyId: string, now: Date): Promise<KeyUsage> {
    const day = koreanDate(now);
    const month = koreanMonth(now);
    if (this.behind.delete(keyId)) {
      await this.reading.get(keyId)?.catch(() => undefined); // it may have started before the charge committed
      await this.refresh(keyId, now);
    }
    let f = this.figures.get(keyId);
    if (!f || f.day !== day || f.month !== month) {
      await this.refresh(keyId, now);
      f = this.figures.get(keyId);
      if (!f || f.day !== day || f.month !== month) return this.opts.read(keyId, now); // evicted, or a clock on another day
    } else if (Date.now() - f.readAtMs >= this.ttlMs) {
      void this.refresh(keyId, now).catch(() => undefined); // kept as it is; the next check tries again
    }
    return { dayNano: f.dayNano, monthNano: f.monthNano };
  }

  /** Taken when a call's charge is handed over: the figure it may add to. */
  token(keyId: string): UseToken {
    return this.figures.get(keyId)?.read ?? -1;
  }

  /** A charge of the key committed: added to the figure when the figure's read did not race with it. */
  note(keyId: string, chargedNano: bigint, finishedAt: Date, token: UseToken): void {
    const f = this.figures.get(keyId);
    if (!f || chargedNano <= 0n) return;
    if (f.read !== token) {
      this.behind.add(keyId);
      return;
    }
    if (f.day === koreanDate(finishedAt)) f.dayNano += chargedNano;
    if (f.month === koreanMonth(finishedAt)) f.monthNano += chargedNano;
  }

  /** Use written some other way than a charge of this process: the key's next check reads it. */
  forget(keyId: string): void {
    this.forgets++;
    this.figures.delete(keyId);
  }

  private refresh(keyId: string, now: Date): Promise<void> {
    let r = this.reading.get(keyId);
    if (!r) {
      const forgets = this.forgets;
      r = this.opts
        .read(keyId, now)
        .then((u) => {
          if (forgets === this.forgets) this.keep(keyId, now, u);
        })
        .finally(() => this.reading.delete(keyId));
      this.reading.set(keyId, r);
    }
    return r;
  }

  private keep(keyId: string, now: Date, u: KeyUsage): void {
    const day = koreanDate(now);
    const month = koreanMonth(now);
    const cur = this.figures.get(keyId);
    const same = cur && cur.day === day && cur.month === month;
    this.figures.set(keyId, {
      day,
      month,
      dayNano: same && cur.dayNano > u.dayNano ? cur.dayNano : u.dayNano,
      monthNano: same && cur.monthNano > u.monthNano ? cur.monthNano : u.monthNano,
      read: ++this.reads,
      readAtMs: Date.now(),
    });
  }
}
