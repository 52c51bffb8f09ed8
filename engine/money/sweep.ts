// The sweeper's pass (ledger.sweepExpired): releases the held reservations whose expiry passed (their
// process died), as `expire` ops of the batcher, 200 at a time. Each expiry is a move of its own: one that
// fails (a broken invariant of that reservation, say) is reported with its reservation and wallet and left
// out of the rest of the pass, and the others, of every wallet, are still released. A pass that stopped at
// the first failure would leave every wallet's expired holds held, sweep after sweep.
import type { Db } from '../db/db.ts';
import type { FinishOp, FinishOutcome, SweepErrorHandler } from './types.ts';

const PAGE = 200;
/** Pages one pass sweeps at most: 100,000 holds. */
const MAX_PAGES = 500;

/** Expires what is due at `at`; returns how many it expired. Throws only when the reservations cannot be read. */
export async function sweepExpired(
  db: Db,
  finish: (op: FinishOp) => Promise<FinishOutcome>,
  at: Date,
  report: SweepErrorHandler,
): Promise<number> {
  const failed: string[] = [];
  let count = 0;
  // A pass sweeps at most MAX_PAGES pages; what is left (a backlog after a long outage) waits for the next pass.
  for (let page = 0; page < MAX_PAGES; page++) {
    const due = await db.query<{ id: string; wallet_id: string }>(
      `SELECT id, wallet_id FROM reservations
        WHERE state = 'held' AND expires_at <= $1::timestamptz AND NOT (id = ANY($2::text[]))
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
      const { id, wallet_id } = due.rows[i];
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
