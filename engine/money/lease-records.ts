// A call charged on a lease within what the lease holds for it is its usage record alone, carrying the lease's id:
// one statement writes every such charge waiting, under a share lock of their leases, and moves no lot, hold or
// journal row. The lease pays what its records owe when it ends (policy.ts `finish`), and every view counts them
// as spent meanwhile (docs/money.md, "Charges owed on a lease").
import type { Transaction } from '../db/db.ts';
import { groupedStatements, type RecordedDraws, recordedDraws, withCtes } from './batch-charge-rows.ts';
import type { Pending } from './batch-queues.ts';
import { looksForEarlierWrite } from './policy.ts';
import { isLockTimeout, isRetryable } from './retry.ts';
import type { FinishOp, FinishOutcome } from './types.ts';

/** A draw written as its record alone: a first try within its lease's hold whose rows carry its id. */
export const owedOnLease = (op: Pending['op']): op is FinishOp =>
  op.kind === 'draw' &&
  op.drawId !== undefined &&
  op.holdAtMostNano === undefined &&
  op.actualNano >= 0n &&
  op.rows?.some((r) => r.writer.owesOnLease === true) === true &&
  !looksForEarlierWrite(op);

// The leases, share-locked (a lease's end locks it for update, so it waits for these records and sums them after).
const SHARE_SQL = `
SELECT lease_records_fit(count(*) = $2::int) FROM (
  SELECT id FROM reservations WHERE id = ANY($1::text[]) AND state = 'held' ORDER BY id FOR SHARE
) l`;

/**
 * The records, after the lock, in a fresh snapshot: none of their charges written meanwhile by a replay of the spool
 * (as a record or a draw row, the Book's look, batch-sql.ts), and no lot of their leases expired by a pass. A pass
 * gives back what a lease holds for no call and for no record it sees; a charge decided before it and written after
 * would owe more than the lease still holds, so it takes the Book's path, which charges what is there.
 */
const recordsSql = (recorded: RecordedDraws['queries']) =>
  `SELECT lease_records_fit(NOT EXISTS (SELECT draw_id FROM reservation_draws WHERE draw_id = ANY($1::text[])${recorded
    .map((q) => ` UNION ALL ${q('$1', '$2', '$4')}`)
    .join('')}) AND NOT EXISTS (SELECT 1 FROM reservation_lots rl JOIN credit_lots l ON l.id = rl.lot_id
     WHERE rl.reservation_id = ANY($3::text[]) AND l.expired_nano > 0))`;

/** How a batch of records ends: committed, or not fitting (its ops then run one by one). */
type OwedVerdict = { kind: 'done'; outcomes: { ok: true; value: FinishOutcome }[] } | { kind: 'failed'; error: unknown };

/** Writes the batch's draws as records owed on their leases, with its COMMIT. */
export async function writeOwed(tx: Transaction, batch: readonly Pending[]): Promise<OwedVerdict> {
  const ops = batch.map((p) => p.op as FinishOp);
  const due = batch.map((p, i) => {
    const op = ops[i]!;
    return { owner: p, rows: op.rows!, chargedNano: op.actualNano, transferId: op.drawId!, leaseId: op.id };
  });
  const leaseIds = [...new Set(ops.map((op) => op.id))].sort();
  const recorded = recordedDraws(ops);
  const write = withCtes(recordsSql(recorded.queries), 4, groupedStatements(due));
  // Sent together, run in order; when the lock fails, the write fails behind it, and the lock's error is the cause.
  const [locked, written] = await Promise.allSettled([
    tx.query(SHARE_SQL, [leaseIds, leaseIds.length]),
    tx.queryAndCommit(write.sql, [
      ops.map((op) => op.drawId!),
      recorded.since.toISOString(),
      leaseIds,
      recorded.until.toISOString(),
      ...write.params,
    ]),
  ]);
  const failed = locked.status === 'rejected' ? locked : written.status === 'rejected' ? written : null;
  if (failed) {
    if (isLockTimeout(failed.reason) || isRetryable(failed.reason)) throw failed.reason;
    return { kind: 'failed', error: failed.reason };
  }
  const outcomes = ops.map((op) => ({
    ok: true as const,
    value: { chargedNano: op.actualNano, shortfallNano: 0n, alreadyFinished: false, releasedNano: 0n, finished: false },
  }));
  return { kind: 'done', outcomes };
}
