// Events, written once with the exact body every delivery sends, in the transaction that decided them and with
// their pending deliveries, so a crossing and its deliveries commit together. Events never carry a prompt, an answer
// or a key's text.

import { randomBytes } from 'node:crypto';
import { type DisplayCurrency, moneyText, NANO_PER_CREDIT, type Rounding } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';

export const EVENT_TYPES = [
  'balance.threshold_crossed',
  'key.monthly_limit_threshold_crossed',
  'key.daily_limit_threshold_crossed',
  'key_group.monthly_limit_threshold_crossed',
  'key_group.daily_limit_threshold_crossed',
  'video.finished',
  'key.expiring',
  'credits.expiring',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const isEventType = (v: unknown): v is EventType => typeof v === 'string' && (EVENT_TYPES as readonly string[]).includes(v);

/**
 * Which way each amount of credits in a payload rounds in its money (core/money.ts's Rounding), by its path in
 * `data`: down for what the wallet has, up for what was used. The owner's own figures read back as typed: a
 * limit or threshold typed in won was rounded down to the credit, so it rounds up; a top-up was rounded up, so it
 * rounds down (core/money.ts, creditsOfAmount). A field missing here is refused by withMoney, so a new amount
 * cannot go out rounded a way nobody chose.
 */
const ROUNDING_OF: Record<string, Rounding> = {
  balance_credits: 'down',
  credits: 'down', // credits.expiring: what the lot has left
  'threshold.credits': 'up',
  last_top_up_credits: 'down',
  limit_credits: 'up',
  used_credits: 'up',
};

/**
 * The payload with each amount of credits said in money beside it, as billing.yaml's display currency shows
 * it (`balance_credits` → `balance_money: "₩70,000 · $50.00"`, `credits` → `money`), at every depth; as it
 * was without a display currency. The credits stay the figures a program reads.
 */
export function withMoney(data: Record<string, unknown>, currency: DisplayCurrency | null, path = ''): Record<string, unknown> {
  if (!currency) return data;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) {
    out[k] =
      v !== null && typeof v === 'object' && !Array.isArray(v) ? withMoney(v as Record<string, unknown>, currency, `${path}${k}.`) : v;
    const m = /^(.*?)_?credits$/.exec(k);
    if (!m || typeof v !== 'number' || !Number.isSafeInteger(v)) continue;
    const rounding = ROUNDING_OF[`${path}${k}`];
    if (!rounding) throw new TypeError(`webhook payload field ${path}${k} has no rounding in events.ts ROUNDING_OF`);
    out[m[1] ? `${m[1]}_money` : 'money'] = moneyText(BigInt(v) * NANO_PER_CREDIT, currency, rounding);
  }
  return out;
}

export const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** The body a receiver gets. */
interface EventBody {
  id: string;
  object: 'event';
  type: EventType;
  created: number;
  wallet_id: string;
  data: Record<string, unknown>;
}

/**
 * Writes the event and a delivery to each of the wallet's endpoints subscribed to its type; none subscribed:
 * nothing is written (null). Returns the event id and how many deliveries were queued.
 */
export async function recordEvent(
  q: Queryable,
  walletId: string,
  type: EventType,
  data: Record<string, unknown>,
  at: Date,
  currency: DisplayCurrency | null = null,
): Promise<{ eventId: string; deliveries: number } | null> {
  const hooks = await q.query<{ id: string }>(`SELECT id FROM webhooks WHERE wallet_id = $1 AND deleted_at IS NULL AND $2 = ANY(events)`, [
    walletId,
    type,
  ]);
  if (hooks.rows.length === 0) return null;
  const id = newId('evt');
  const body: EventBody = {
    id,
    object: 'event',
    type,
    created: Math.floor(at.getTime() / 1000),
    wallet_id: walletId,
    data: withMoney(data, currency),
  };
  await q.query(`INSERT INTO webhook_events (id, wallet_id, type, created_at, body) VALUES ($1, $2, $3, $4::timestamptz, $5)`, [
    id,
    walletId,
    type,
    at.toISOString(),
    JSON.stringify(body),
  ]);
  for (const h of hooks.rows) {
    await q.query(`INSERT INTO webhook_deliveries (id, event_id, webhook_id) VALUES ($1, $2, $3)`, [newId('dlv'), id, h.id]);
  }
  return { eventId: id, deliveries: hooks.rows.length };
}
