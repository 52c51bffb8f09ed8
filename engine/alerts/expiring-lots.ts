// credits.expiring: once per credit lot whose expiry comes within the owner's lead time, fired by the watcher's
// sweep on every process and exactly once across them by the thresholds' conditional write (subject `lot:<id>`).
import { koreanDate } from '../core/clock.ts';
import { type DisplayCurrency, nanoToCreditsFloor, toBigInt } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import { recordEvent } from './events.ts';
import { DEFAULT_SETTINGS } from './policy.ts';

/** Lots one sweep looks at, at most; the rest wait for the next sweep. */
const MAX_LOTS = 1_000;

// Lots with money left, expiring after now and within their wallet's lead time, whose owner subscribes an endpoint
// to credits.expiring and that have not fired yet (credit_lots_expiry covers the expiry with money left).
const DUE_SQL = `
SELECT l.id, l.wallet_id, l.vendors, (l.available_nano + l.reserved_nano)::text AS left_nano, l.expires_at
  FROM credit_lots l
  LEFT JOIN alert_settings s ON s.wallet_id = l.wallet_id
 WHERE l.expires_at IS NOT NULL AND l.available_nano > 0 AND l.expires_at > $1::timestamptz
   AND l.expires_at <= $1::timestamptz + coalesce(s.credits_expiring_days, $2::int) * interval '1 day'
   AND EXISTS (SELECT 1 FROM webhooks w WHERE w.wallet_id = l.wallet_id AND w.deleted_at IS NULL AND 'credits.expiring' = ANY(w.events))
   AND NOT EXISTS (SELECT 1 FROM alert_state a WHERE a.subject = 'lot:' || l.id AND a.threshold = 'expiring')
 ORDER BY l.expires_at LIMIT ${MAX_LOTS}`;

const FIRE_ONCE_SQL = `
INSERT INTO alert_state (subject, threshold, armed, period, fired_at) VALUES ($1, 'expiring', false, $2, $3::timestamptz)
ON CONFLICT (subject, threshold) DO NOTHING
RETURNING subject`;

interface DueLot {
  id: string;
  wallet_id: string;
  vendors: string[] | null;
  left_nano: string;
  expires_at: Date | string;
}

/** Fires credits.expiring for every lot due at `now`; returns how many events this process wrote. */
export async function fireExpiringLots(db: Db, now: Date, currency: DisplayCurrency | null): Promise<number> {
  const due = await db.query<DueLot>(DUE_SQL, [now.toISOString(), DEFAULT_SETTINGS.creditsExpiringDays]);
  let fired = 0;
  for (const lot of due.rows) {
    const expiresAt = new Date(lot.expires_at);
    fired += await db.transaction(async (tx) => {
      const won = await tx.query(FIRE_ONCE_SQL, [`lot:${lot.id}`, expiresAt.toISOString(), now.toISOString()]);
      if (won.rows.length === 0) return 0; // another process fired it
      const data = {
        lot: { id: lot.id, vendors: lot.vendors ?? null },
        credits: Number(nanoToCreditsFloor(toBigInt(lot.left_nano))),
        expires_at: expiresAt.toISOString(),
        expires_on: koreanDate(expiresAt),
      };
      return (await recordEvent(tx, lot.wallet_id, 'credits.expiring', data, now, currency)) ? 1 : 0;
    });
  }
  return fired;
}
