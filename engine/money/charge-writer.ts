// The one writer of charges, decided once in memory and retried here until they land (for a day at most): the
// answer each pays for was or is about to be given (docs/decisions/charge-writer.md).

import { setTimeout as sleep } from 'node:timers/promises';
import { settledWithin } from '../core/wait.ts';
import type { ChargeIntent, ChargeSpool } from './charge-spool.ts';
import type { KeptHolds } from './kept-holds.ts';
import { CHARGE_RETRY, type ChargeRetry, isFinal, isLockTimeout, nextDelayMs } from './retry.ts';
import type { FinishOutcome, FirstTry, MoneyLog } from './types.ts';

type Written = Pick<FinishOutcome, 'chargedNano' | 'shortfallNano'>;

export interface Charge {
  readonly callId: string;
  /** Resolves with what was charged once it is committed; rejects only when it was given up. */
  readonly committed: Promise<bigint>;
  /** Settles when the writer is done with it (written or given up); never rejects. */
  readonly done: Promise<void>;
  /**
   * The wait for the commit ran out: true when the answer may go out first (kept on disk, no spool, or landed);
   * false when the spool could not keep it, as a kill would leave that answer free.
   */
  answeredFirst(): boolean;
  /**
   * Once answered first: resolves when the hold it posts against is marked as owed (kept-holds.ts), or the mark
   * failed; the answer's end waits for it, so a kill right after the answer cannot leave the hold to the sweeper.
   */
  holdMarked(): Promise<unknown>;
}

export interface ChargeStats {
  /** Charges handed over and not yet written. */
  pending: number;
  /** Of those, the ones whose answer already went out. */
  atRisk: number;
  /** Of those, the ones whose last attempt failed (the database is not taking writes). */
  failing: number;
  /** Charges given up since start (a final refusal). */
  givenUp: number;
  /** Vendor work wallets could not pay since start, nano-USD. */
  shortfallNano: bigint;
}

interface Entry {
  callId: string;
  /** The wallet charged, when the caller says. */
  walletId?: string | undefined;
  /** Its last write waited too long for a lock another session holds on its wallet's rows (batcher.ts). */
  walletLocked: boolean;
  failing: boolean;
  atRisk: boolean;
  done?: Promise<void>;
  /** What the charge is, for the spool: asked only when it is kept. */
  intent?: (() => ChargeIntent) | undefined;
  /** Kept in the spool: the next process writes it if this one cannot. */
  kept: boolean;
  /** The hold its charge posts against, once kept, and its mark (kept-holds.ts). */
  holdId?: string;
  marked?: Promise<boolean> | undefined;
}

/** How often `caughtUp` looks again at which charges hold its wallet back. */
const CAUGHT_UP_RECHECK_MS = 25;
/** A bound on `caughtUp`'s passes: its deadline ends it first (every pass waits CAUGHT_UP_RECHECK_MS at most). */
const CAUGHT_UP_PASSES_MAX = 1_000;

export class ChargeWriter {
  private readonly entries = new Set<Entry>();
  private givenUp = 0;
  private shortfallNano = 0n;
  private stopping = false;

  constructor(
    private readonly log: () => MoneyLog,
    private readonly policy: ChargeRetry = CHARGE_RETRY,
    private readonly spool: ChargeSpool | null = null,
    /** The holds kept charges owe, marked so the sweeper keeps them while the spool waits to be written again. */
    private readonly keptHolds: KeptHolds | null = null,
  ) {}

  /** Writes the charge until it lands or its tries run out; with `intent`, one at risk or failing is kept in the spool meanwhile. */
  submit(callId: string, write: (firstTry: FirstTry) => Promise<Written>, intent?: () => ChargeIntent, walletId?: string): Charge {
    const entry: Entry = { callId, walletId, walletLocked: false, failing: false, atRisk: false, intent, kept: false };
    this.entries.add(entry);
    const committed = this.writeUntilLanded(entry, write).then(
      (charged) => {
        this.forget(entry, true);
        return charged;
      },
      (e: unknown) => {
        this.forget(entry, isFinal(e));
        throw e;
      },
    );
    const done = committed.then(() => undefined).catch(() => undefined);
    entry.done = done;
    return {
      callId,
      committed,
      done,
      answeredFirst: () => {
        if (!this.entries.has(entry)) return true;
        entry.atRisk = true;
        this.keep(entry);
        return entry.kept || this.spool === null;
      },
      holdMarked: () => entry.marked ?? Promise.resolve(true),
    };
  }

  /**
   * Whether a call of `walletId` is refused (503): a write failing, or an answer gone out before its charge was
   * written. A charge whose wallet's rows another session holds locked counts for that wallet's calls only (docs/money.md).
   */
  behind(walletId?: string): boolean {
    let late = false;
    for (const e of this.entries) if (e.failing || e.atRisk) late = true;
    if (!late) return false; // the usual answer, without building the set below
    // A wallet one of whose charges failed on its locked rows: its other charges late or failing are its own too.
    const locked = new Set<string>();
    for (const e of this.entries) if (e.walletLocked && e.walletId !== undefined) locked.add(e.walletId);
    for (const e of this.entries) {
      const own = e.walletId !== undefined && locked.has(e.walletId);
      if ((e.failing || e.atRisk) && (!own || e.walletId === walletId)) return true;
    }
    return false;
  }

  /**
   * Waits up to `timeoutMs` for the charges that hold back `walletId`'s calls to land: a commit slower than the
   * answer's wait, or a write retried after a lock timeout, is a hiccup its next calls ride out, not a refusal.
   */
  async caughtUp(walletId: string, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    // Looked at every few ms, not awaited charge by charge: a charge found to be another wallet's own (its rows
    // locked) stops holding this wallet back without landing.
    for (let pass = 0; pass < CAUGHT_UP_PASSES_MAX; pass++) {
      const behind = this.behind(walletId);
      const left = deadline - Date.now();
      if (!behind || left <= 0) return !behind;
      await sleep(Math.min(left, CAUGHT_UP_RECHECK_MS));
    }
    return !this.behind(walletId);
  }

  stats(): ChargeStats {
    let atRisk = 0;
    let failing = 0;
    for (const e of this.entries) {
      if (e.atRisk) atRisk++;
      if (e.failing) failing++;
    }
    return { pending: this.entries.size, atRisk, failing, givenUp: this.givenUp, shortfallNano: this.shortfallNano };
  }

  /** At shutdown: waits up to `timeoutMs` for the charges still pending; logs and returns how many were left. */
  async drain(timeoutMs: number): Promise<number> {
    this.stopping = true;
    await settledWithin(Promise.allSettled([...this.entries].map((e) => e.done)), timeoutMs);
    for (const e of this.entries) {
      this.keep(e);
      if (e.kept) this.log().warn({ callId: e.callId }, 'charge not written at shutdown: kept for the next start');
      else this.log().error({ callId: e.callId }, 'charge lost at shutdown: the database did not take it');
    }
    return this.entries.size;
  }

  /** Keeps the entry's intent in the spool, once, and marks its hold; a spool that cannot write is said in the log, never thrown. */
  private keep(entry: Entry): void {
    if (entry.kept) {
      if (entry.holdId !== undefined) this.keptHolds?.retry(entry.holdId);
      return;
    }
    if (!entry.intent || !this.spool) return;
    try {
      const intent = entry.intent();
      this.spool.keep(intent);
      entry.kept = true;
      entry.holdId = intent.reservationId;
      entry.marked = this.keptHolds?.kept(intent.reservationId);
    } catch (e) {
      this.log().error({ err: e, callId: entry.callId }, 'charge not kept on disk: only memory holds it');
    }
  }

  /**
   * The entry is done with: a kept intent is marked landed (a refusal would be refused again after a restart), once
   * its hold is unmarked. A line left while its hold stays marked lets the next process's replay give that hold back.
   */
  private forget(entry: Entry, landed: boolean): void {
    this.entries.delete(entry);
    if (!entry.kept) return;
    const unmarked = entry.holdId !== undefined && this.keptHolds ? this.keptHolds.landed(entry.holdId) : Promise.resolve(true);
    void unmarked.then((ok) => {
      if (ok && landed) this.spool!.landed(entry.callId);
    });
  }

  private async writeUntilLanded(entry: Entry, write: (firstTry: FirstTry) => Promise<Written>): Promise<bigint> {
    let delay: number | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        // A first try stops being one once its intent is kept: another process may replay it from then on.
        const w = await write(() => attempt === 1 && !entry.kept);
        if (w.shortfallNano > 0n) {
          this.shortfallNano += w.shortfallNano;
          this.log().warn({ callId: entry.callId, shortfallNano: String(w.shortfallNano) }, 'vendor work the wallet could not pay');
        }
        return w.chargedNano;
      } catch (e) {
        if (isFinal(e) || attempt >= this.policy.attempts) {
          this.givenUp++;
          const why = isFinal(e) ? 'the ledger refused it' : 'the database did not take it within its tries';
          this.log().error({ err: e, callId: entry.callId }, `charge given up: ${why}`);
          throw e;
        }
        entry.failing = true;
        entry.walletLocked = entry.walletId !== undefined && isLockTimeout(e);
        this.keep(entry);
        delay = nextDelayMs(this.policy, delay);
        this.log().warn({ err: e, callId: entry.callId, delayMs: delay }, 'charge not written yet: retrying');
        // At shutdown, at most 200 ms apart: drain's deadline is seconds away, and the process then exits.
        await new Promise((r) => setTimeout(r, this.stopping ? Math.min(delay!, 200) : delay));
      }
    }
  }
}
