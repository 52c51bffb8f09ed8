// Draw rows exist so a batch retried after an unclear commit skips draws it already wrote; after that they are
// only a trail the usage records also keep, so they are pruned with them (a held lease's draws are kept).
import type { Db } from '../db/db.ts';

/** Rows per DELETE, so pruning never holds one long transaction; what MAX_CHUNKS leaves waits for the next run. */
const PRUNE_CHUNK = 10_000;
const MAX_CHUNKS = 1_000;

/** Removes the draws written before `before` whose lease is no longer held; returns how many. */
export async function pruneDraws(db: Db, before: Date, chunk = PRUNE_CHUNK): Promise<number> {
  let removed = 0;
  for (let i = 0; i < MAX_CHUNKS; i++) {
    const r = await db.query(
      `DELETE FROM reservation_draws WHERE draw_id IN (
         SELECT d.draw_id FROM reservation_draws d JOIN reservations r ON r.id = d.reservation_id
          WHERE d.at < $1::timestamptz AND r.state <> 'held'
          LIMIT $2)`,
      [before.toISOString(), chunk],
    );
    removed += r.rowCount;
    if (r.rowCount < chunk) return removed;
  }
  return removed;
}
