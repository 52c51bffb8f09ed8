// The sweeper releases holds whose process died (a hold charges kept on disk owe, a day later: kept-holds.ts). Each expiry is its own move, so one that fails is reported and
// skipped: a pass that stopped at the first failure would leave every wallet's expired holds held, sweep after sweep.
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import { KEPT_HOLD_MS } from './kept-holds.ts';
import type { FinishOp, FinishOutcome, Ledger, MoneyLog, SweepErrorHandler } from './types.ts';

const PAGE = 200;
/** Pages one pass sweeps at most (100,000 holds); a larger backlog, after a long outage, waits for the next pass. */
const MAX_PAGES = 500;

/** Expires what is due at `at`; returns how many it expired. Throws only when the reservations cannot be read. */
async function sweepExpired(
  db: Db,
  finish: (op: FinishOp) => Promise<FinishOutcome>,
  at: Date,
  report: SweepErrorHandler,
): Promise<number> {
  const failed: string[] = [];
  let count = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const due = await db.query<{ id: string; wallet_id: string }>(
      `SELECT id, wallet_id FROM reservations
        WHERE state = 'held' AND expires_at <= $1::timestamptz AND NOT (id = ANY($2::text[]))
          AND (kept_at IS NULL OR kept_at <= $1::timestamptz - interval '${KEPT_HOLD_MS} milliseconds')
        ORDER BY expires_at LIMIT ${PAGE}`,
      [at.toISOString(), failed],
    );
    if (due.rows.length === 0) return count;
    const done = await Promise.allSettled(
      due.rows.map(({ id, wallet_id }) => finish({ kind: 'expire', id, walletId: wallet_id, actualNano: 0n, expireBefore: at })),
    );
    let finished = 0;
    done.forEach((d, i) => {
      if (d.status === 'fulfilled') {
        if (d.value.finished) finished++;
        return;
      }
      const { id, wallet_id } = due.rows[i]!; // one settled promise per due row
      failed.push(id);
      report(d.reason, { reservationId: id, walletId: wallet_id });
    });
    count += finished;
    // Nothing expired and nothing failed: what is left was extended or finished meanwhile (the next pass sees it).
    const progressed = finished > 0 || done.some((d) => d.status === 'rejected');
    if (!progressed || due.rows.length < PAGE) return count;
  }
  return count;
}

/** The ledger's sweeper pass on demand (`Ledger.sweepExpired`). */
export function sweeperMethod(
  db: Db,
  finish: (op: FinishOp) => Promise<FinishOutcome>,
  clock: Clock,
  log: Pick<MoneyLog, 'error'> | undefined,
): Ledger['sweepExpired'] {
  return async (now, onError) => {
    // With nowhere to report a failed expiry, the first is thrown, once the others are swept.
    const unreported: unknown[] = [];
    const report: SweepErrorHandler =
      onError ??
      (log
        ? (err, expire) => log.error({ err, ...expire }, 'ledger sweep: expiring a reservation failed')
        : (err) => void unreported.push(err));
    const count = await sweepExpired(db, finish, now ?? clock.now(), report);
    if (unreported.length > 0) throw unreported[0];
    return count;
  };
}

/** Runs `pass` every `intervalMs`, one at a time (a tick while one runs is skipped); returns stop(). `pass` must not reject. */
export function onePassAtATime(intervalMs: number, pass: () => Promise<unknown>): () => void {
  let running = false;
  const t = setInterval(() => {
    if (running) return;
    running = true;
    void pass().finally(() => {
      running = false;
    });
  }, intervalMs);
  t.unref();
  return () => clearInterval(t);
}

/** Sweeps every `intervalMs`: each expiry that failed goes to `onError` with its reservation, a failed pass without. */
export const startSweeper = (ledger: Pick<Ledger, 'sweepExpired'>, intervalMs: number, onError: SweepErrorHandler): (() => void) =>
  onePassAtATime(intervalMs, () => ledger.sweepExpired(undefined, onError).catch((e: unknown) => onError(e)));
