// What the owner sees of deliveries, and replay: a recorded event sent again to an endpoint, as a new delivery
// of the same event (same id and body, so a receiver that keeps event ids can tell it is a repeat).
import { errors } from '../core/errors.ts';
import type { Queryable } from '../db/db.ts';
import { newId } from './events.ts';

interface AttemptView {
  n: number;
  at: string;
  status_code: number | null;
  error: string | null;
  response_excerpt: string | null;
  duration_ms: number;
}

interface DeliveryView {
  object: 'webhook_delivery';
  id: string;
  event_id: string;
  event_type: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: AttemptView[];
  next_attempt_at: string | null;
  replay_of: string | null;
  created_at: string;
}

const iso = (v: unknown) => new Date(v as string).toISOString();

/** The endpoint's deliveries, newest first, each with its attempts; 404 for another wallet's or a deleted endpoint. */
export async function listDeliveries(q: Queryable, walletId: string, webhookId: string, limit = 50): Promise<DeliveryView[]> {
  await ownWebhook(q, walletId, webhookId);
  const d = await q.query<Record<string, unknown>>(
    `SELECT d.id, d.event_id, e.type, d.state, d.next_attempt_at, d.replay_of, d.created_at
       FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
      WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.id LIMIT $2`,
    [webhookId, Math.min(Math.max(limit, 1), 200)],
  );
  const ids = d.rows.map((r) => String(r.id));
  const a = ids.length
    ? await q.query<Record<string, unknown>>(
        `SELECT delivery_id, n, at, status_code, error, excerpt, duration_ms FROM webhook_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY n`,
        [ids],
      )
    : { rows: [] };
  return d.rows.map((r) => ({
    object: 'webhook_delivery',
    id: String(r.id),
    event_id: String(r.event_id),
    event_type: String(r.type),
    state: r.state as DeliveryView['state'],
    attempts: a.rows
      .filter((x) => x.delivery_id === r.id)
      .map((x) => ({
        n: Number(x.n),
        at: iso(x.at),
        status_code: x.status_code == null ? null : Number(x.status_code),
        error: (x.error as string | null) ?? null,
        response_excerpt: (x.excerpt as string | null) ?? null,
        duration_ms: Number(x.duration_ms),
      })),
    next_attempt_at: r.state === 'pending' ? iso(r.next_attempt_at) : null,
    replay_of: (r.replay_of as string | null) ?? null,
    created_at: iso(r.created_at),
  }));
}

async function ownWebhook(q: Queryable, walletId: string, webhookId: string): Promise<void> {
  const w = await q.query(`SELECT 1 FROM webhooks WHERE id = $1 AND wallet_id = $2 AND deleted_at IS NULL`, [webhookId, walletId]);
  if (w.rows.length === 0) throw errors.notFound(`No webhook '${webhookId}' in this wallet.`);
}

/** Queues the event again for the endpoint; the event must have been sent to it before. Returns the new delivery's id. */
export async function replayEvent(q: Queryable, walletId: string, webhookId: string, eventId: string): Promise<string> {
  await ownWebhook(q, walletId, webhookId);
  const prior = await q.query<{ id: string }>(
    `SELECT d.id FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
      WHERE d.webhook_id = $1 AND d.event_id = $2 AND e.wallet_id = $3 ORDER BY d.created_at DESC LIMIT 1`,
    [webhookId, eventId, walletId],
  );
  const [found] = prior.rows;
  if (!found) throw errors.notFound(`No event '${eventId}' was sent to webhook '${webhookId}'.`);
  const id = newId('dlv');
  await q.query(`INSERT INTO webhook_deliveries (id, event_id, webhook_id, replay_of) VALUES ($1, $2, $3, $4)`, [
    id,
    eventId,
    webhookId,
    found.id,
  ]);
  return id;
}
