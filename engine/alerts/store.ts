// The owner's side of alerts: thresholds (settings) and webhook endpoints, read and changed here by the API
// doors and the dashboard alike, each change recorded in the audit trail in its own transaction (never the
// secret: only the id, URL and subscribed events).

import { type Actor, changedFields, recordAudit } from '../audit/trail.ts';
import type { Clock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import type { Db, Queryable } from '../db/db.ts';
import type { AddressGuard } from './address-guard.ts';
import { EVENT_TYPES, type EventType, isEventType, newId } from './events.ts';
import { type AlertSettings, DEFAULT_SETTINGS, SETTINGS_LIMITS } from './policy.ts';
import { newWebhookSecret } from './signature.ts';

/** The settings as the doors show them (snake_case). */
interface SettingsView {
  object: 'alert_settings';
  balance_percent_of_last_top_up: number[];
  balance_credits: number[];
  key_monthly_limit_percent: number[];
  key_daily_limit_percent: number[];
  credits_expiring_days: number;
}

export const settingsView = (s: AlertSettings): SettingsView => ({
  object: 'alert_settings',
  balance_percent_of_last_top_up: s.balancePercents,
  balance_credits: s.balanceCredits,
  key_monthly_limit_percent: s.keyMonthlyPercents,
  key_daily_limit_percent: s.keyDailyPercents,
  credits_expiring_days: s.creditsExpiringDays,
});

const FIELDS = {
  balance_percent_of_last_top_up: 'balancePercents',
  balance_credits: 'balanceCredits',
  key_monthly_limit_percent: 'keyMonthlyPercents',
  key_daily_limit_percent: 'keyDailyPercents',
} as const;

/** A PUT/PATCH body over `current`: only the fields sent change; each is a list of positive numbers. */
export function parseSettings(body: unknown, current: AlertSettings): AlertSettings {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.invalidRequest('Send a JSON object.');
  const out: AlertSettings = { ...current };
  for (const [field, value] of Object.entries(body)) {
    if (field === 'object') continue;
    if (field === 'credits_expiring_days') {
      out.creditsExpiringDays = expiringDays(value);
      continue;
    }
    if (!(field in FIELDS))
      throw errors.invalidRequest(`Unknown field '${field}'; send ${[...Object.keys(FIELDS), 'credits_expiring_days'].join(', ')}.`, field);
    const percent = field !== 'balance_credits';
    if (!Array.isArray(value) || value.length > SETTINGS_LIMITS.perList)
      throw errors.invalidRequest(`${field} must be a list of up to ${SETTINGS_LIMITS.perList} numbers.`, field);
    for (const v of value) {
      const ok = percent
        ? typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= SETTINGS_LIMITS.maxPercent
        : typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
      if (!ok)
        throw errors.invalidRequest(
          `${field}: ${JSON.stringify(v)} is not ${percent ? `a whole percent from 1 to ${SETTINGS_LIMITS.maxPercent}` : 'a positive whole number of credits'}.`,
          field,
        );
    }
    out[FIELDS[field as keyof typeof FIELDS]] = [...new Set(value as number[])].sort((a, b) => b - a);
  }
  return out;
}

/** Days before a lot's expiry: a whole number from 1 to 365 (a form's one-number list is taken as that number). */
function expiringDays(value: unknown): number {
  const v = Array.isArray(value) && value.length === 1 ? value[0] : value;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > SETTINGS_LIMITS.maxExpiringDays)
    throw errors.invalidRequest(
      `credits_expiring_days must be a whole number of days from 1 to ${SETTINGS_LIMITS.maxExpiringDays}.`,
      'credits_expiring_days',
    );
  return v;
}

const numbers = (v: unknown): number[] =>
  (Array.isArray(v) ? v : typeof v === 'string' ? v.replace(/[{}]/g, '').split(',').filter(Boolean) : []).map(Number);

export async function readSettings(q: Queryable, walletId: string): Promise<AlertSettings> {
  const r = await q.query<Record<string, unknown>>(
    `SELECT balance_percents, balance_credits::text[] AS balance_credits, key_monthly_percents, key_daily_percents, credits_expiring_days
       FROM alert_settings WHERE wallet_id = $1`,
    [walletId],
  );
  const row = r.rows[0];
  if (!row) return DEFAULT_SETTINGS;
  return {
    balancePercents: numbers(row.balance_percents),
    balanceCredits: numbers(row.balance_credits),
    keyMonthlyPercents: numbers(row.key_monthly_percents),
    keyDailyPercents: numbers(row.key_daily_percents),
    creditsExpiringDays: row.credits_expiring_days == null ? DEFAULT_SETTINGS.creditsExpiringDays : Number(row.credits_expiring_days),
  };
}

export interface StoreDeps {
  db: Db;
  clock: Clock;
  guard: AddressGuard;
  /** Told when a wallet's settings or endpoints changed, so cached views of them are dropped. */
  changed: (walletId: string) => void;
}

export async function writeSettings(deps: StoreDeps, walletId: string, next: AlertSettings, actor: Actor): Promise<AlertSettings> {
  const at = deps.clock.now();
  await deps.db.transaction(async (tx) => {
    const before = settingsView(await readSettings(tx, walletId));
    await tx.query(
      `INSERT INTO alert_settings (wallet_id, balance_percents, balance_credits, key_monthly_percents, key_daily_percents, updated_at, credits_expiring_days)
       VALUES ($1, $2::int[], $3::bigint[], $4::int[], $5::int[], $6::timestamptz, $7::int)
       ON CONFLICT (wallet_id) DO UPDATE SET balance_percents = EXCLUDED.balance_percents, balance_credits = EXCLUDED.balance_credits,
         key_monthly_percents = EXCLUDED.key_monthly_percents, key_daily_percents = EXCLUDED.key_daily_percents, updated_at = EXCLUDED.updated_at,
         credits_expiring_days = EXCLUDED.credits_expiring_days`,
      [
        walletId,
        next.balancePercents,
        next.balanceCredits,
        next.keyMonthlyPercents,
        next.keyDailyPercents,
        at.toISOString(),
        next.creditsExpiringDays,
      ],
    );
    const diff = changedFields(before as unknown as Record<string, unknown>, settingsView(next) as unknown as Record<string, unknown>);
    if (Object.keys(diff.after).length > 0)
      await recordAudit(tx, actor, { walletId, action: 'alerts.changed', targetId: null, ...diff }, at);
  });
  deps.changed(walletId);
  return next;
}

/** A webhook endpoint as the doors show it: never its secret, except `secret` once in the creation answer. */
interface WebhookView {
  object: 'webhook';
  id: string;
  url: string;
  events: EventType[];
  created_at: string;
  secret?: string;
}

const webhookView = (r: Record<string, unknown>): WebhookView => ({
  object: 'webhook',
  id: String(r.id),
  url: String(r.url),
  events: numbersOrText(r.events) as EventType[],
  created_at: new Date(r.created_at as string).toISOString(),
});

const numbersOrText = (v: unknown): string[] =>
  Array.isArray(v) ? v.map(String) : typeof v === 'string' ? v.replace(/[{}]/g, '').split(',').filter(Boolean) : [];

/** At most this many open endpoints per wallet: each crossing sends to each. */
const MAX_WEBHOOKS = 10;

export async function createWebhook(deps: StoreDeps, walletId: string, body: unknown, actor: Actor): Promise<WebhookView> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw errors.invalidRequest('Send a JSON object with url and events.');
  const { url, events, ...rest } = body as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown) throw errors.invalidRequest(`Unknown field '${unknown}'; send url and events.`, unknown);
  if (typeof url !== 'string' || url.trim() === '')
    throw errors.invalidRequest('url is required: the https address deliveries are posted to.', 'url');
  const list = events === undefined ? [...EVENT_TYPES] : events;
  if (!Array.isArray(list) || list.length === 0 || !list.every(isEventType)) {
    throw errors.invalidRequest(`events must be a non-empty list of: ${EVENT_TYPES.join(', ')}.`, 'events');
  }
  const checked = await deps.guard.checkUrl(url.trim());
  const id = newId('wh');
  const secret = newWebhookSecret();
  const at = deps.clock.now();
  const row = await deps.db.transaction(async (tx) => {
    // Counted under a lock of the wallet's alert lock key, so two creations at once cannot both pass the limit.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`gateway.webhooks.${walletId}`]);
    const open = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks WHERE wallet_id = $1 AND deleted_at IS NULL`, [
      walletId,
    ]);
    if (Number(open.rows[0]!.n) >= MAX_WEBHOOKS)
      throw errors.invalidRequest(`A wallet has at most ${MAX_WEBHOOKS} webhooks; delete one first.`);
    const r = await tx.query<Record<string, unknown>>(
      `INSERT INTO webhooks (id, wallet_id, url, events, secret, created_at) VALUES ($1, $2, $3, $4::text[], $5, $6::timestamptz) RETURNING *`,
      [id, walletId, checked.href, [...new Set(list)], secret, at.toISOString()],
    );
    const view = webhookView(r.rows[0]!);
    await recordAudit(
      tx,
      actor,
      { walletId, action: 'webhook.created', targetId: id, before: null, after: { url: view.url, events: view.events } },
      at,
    );
    return view;
  });
  deps.changed(walletId);
  return { ...row, secret };
}

export async function listWebhooks(db: Queryable, walletId: string): Promise<WebhookView[]> {
  const r = await db.query<Record<string, unknown>>(
    `SELECT * FROM webhooks WHERE wallet_id = $1 AND deleted_at IS NULL ORDER BY created_at DESC, id`,
    [walletId],
  );
  return r.rows.map(webhookView);
}

export async function deleteWebhook(deps: StoreDeps, walletId: string, id: string, actor: Actor): Promise<void> {
  const at = deps.clock.now();
  await deps.db.transaction(async (tx) => {
    const r = await tx.query<Record<string, unknown>>(
      `UPDATE webhooks SET deleted_at = $3::timestamptz WHERE id = $1 AND wallet_id = $2 AND deleted_at IS NULL RETURNING *`,
      [id, walletId, at.toISOString()],
    );
    const [removed] = r.rows;
    if (!removed) throw errors.notFound(`No webhook '${id}' in this wallet.`);
    // What was still waiting for it is not sent: the owner removed the address.
    await tx.query(`UPDATE webhook_deliveries SET state = 'failed' WHERE webhook_id = $1 AND state = 'pending'`, [id]);
    const view = webhookView(removed);
    await recordAudit(
      tx,
      actor,
      { walletId, action: 'webhook.deleted', targetId: id, before: { url: view.url, events: view.events }, after: null },
      at,
    );
  });
  deps.changed(walletId);
}
