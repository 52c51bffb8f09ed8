// The two writes to a held reservation's row that move no money: its expiry (long jobs, leases renewed) and what
// the calls on a lease hold (in-flight.ts). Neither touches a lot or the journal, so neither goes through the batcher.
import type { Queryable } from '../db/db.ts';

/** Moves a held reservation's expiry; false when it is no longer held. */
export async function extendHold(db: Queryable, reservationId: string, expiresAt: Date): Promise<boolean> {
  const r = await db.query(`UPDATE reservations SET expires_at = $2::timestamptz WHERE id = $1 AND state = 'held' RETURNING id`, [
    reservationId,
    expiresAt.toISOString(),
  ]);
  return r.rowCount > 0;
}

/** Writes each held lease's in-flight figure, in one statement. */
export async function noteInFlight(db: Queryable, leases: readonly { reservationId: string; inFlightNano: bigint }[]): Promise<void> {
  if (leases.length === 0) return;
  await db.query(
    `UPDATE reservations r SET in_flight_nano = v.n
       FROM unnest($1::text[], $2::bigint[]) AS v(id, n)
      WHERE r.id = v.id AND r.state = 'held'`,
    [leases.map((l) => l.reservationId), leases.map((l) => l.inFlightNano.toString())],
  );
}
