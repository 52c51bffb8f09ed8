// The charges dead processes left in the spool, written by a live process: a pass at start and every few seconds, so
// files copied in from a host lost for good are written too (docs/money.md, "A crash at each step").
import type { Clock } from '../core/clock.ts';
import type { ChargeRows, ChargeRowWriter } from '../db/charge-rows.ts';
import type { Queryable } from '../db/db.ts';
import { chargeFirst, ladderFor } from './charge-first.ts';
import { type ChargeIntent, type ChargeSpool, spoolStem } from './charge-spool.ts';
import { isFinal } from './retry.ts';
import type { Ledger, MoneyLog } from './types.ts';

const REPLAY_EVERY_MS = 5_000;

interface SpoolReplayOptions {
  spool: ChargeSpool;
  ledger: Ledger;
  db: Queryable;
  clock: Clock;
  rowWriters: readonly ChargeRowWriter<unknown>[];
  /** Read at each use (the app's once it exists). */
  log: () => MoneyLog;
  everyMs?: number;
}

export interface SpoolReplay {
  /** One pass now, or the one running; never throws (a failure is logged, and the next pass tries again). */
  pass(): Promise<void>;
  /** No more passes; resolves once the one running has ended, so the database can close after it. */
  stop(): Promise<void>;
}

/**
 * The owners (as their spool files are named) that hold a hold not yet expired: a live process renews its holds.
 * Holds kept for charges on disk do not count: they last as long as those charges wait, which is for this replay.
 */
async function ownersHolding(db: Queryable, now: Date): Promise<Set<string>> {
  const r = await db.query<{ owner: string }>(
    `SELECT DISTINCT owner FROM reservations WHERE state = 'held' AND expires_at > $1 AND kept_at IS NULL`,
    [now],
  );
  return new Set(r.rows.map((row) => spoolStem(row.owner)));
}

/** Gives back the holds the owner's kept charges owed, now written; throws the first that could not be given back. */
async function releaseKept(o: SpoolReplayOptions, ownerStem: string): Promise<void> {
  const r = await o.db.query<{ id: string; owner: string }>(
    `SELECT id, owner FROM reservations WHERE state = 'held' AND kept_at IS NOT NULL`,
  );
  const ids = r.rows.filter((row) => spoolStem(row.owner) === ownerStem).map((row) => row.id);
  const released = await Promise.allSettled(ids.map((id) => o.ledger.release(id)));
  const failed = released.find((x) => x.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Each charge is keyed by its id, so one already written moves nothing; one refused for good is said in the log. */
async function writeAgain(o: SpoolReplayOptions, i: ChargeIntent): Promise<void> {
  // Its rows step down as the live charge's would have: rows refused for good must not leave the answer free.
  const charge = (rows: ChargeRows | undefined) =>
    i.kind === 'settle'
      ? o.ledger.settle(i.reservationId, i.costNano, rows)
      : o.ledger.draw(i.reservationId, i.costNano, i.drawId ?? i.callId, rows, { holdAtMostNano: i.holdAtMostNano });
  try {
    await chargeFirst(ladderFor(i.rows, o.log(), i.callId), charge);
  } catch (e) {
    if (!isFinal(e)) throw e;
    o.log().error({ err: e, callId: i.callId }, 'a charge left by a stopped process was refused');
  }
}

export function startSpoolReplay(o: SpoolReplayOptions): SpoolReplay {
  let running: Promise<void> | null = null;
  const once = async () => {
    try {
      const n = await o.spool.replay(
        o.rowWriters,
        (i) => writeAgain(o, i),
        () => ownersHolding(o.db, o.clock.now()),
        (owner) => releaseKept(o, owner),
      );
      if (n > 0) o.log().warn({ charges: n }, 'charges left by a stopped process written');
    } catch (e) {
      o.log().warn({ err: e }, 'charges left by a stopped process not written yet, or their holds not given back: trying again');
    }
  };
  const pass = () => {
    running ??= once().finally(() => {
      running = null;
    });
    return running;
  };
  const timer = setInterval(() => void pass(), o.everyMs ?? REPLAY_EVERY_MS);
  timer.unref();
  void pass();
  return {
    pass,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
