// /dashboard/webhooks: the owner's alert thresholds and webhook endpoints, on the same functions as the doors. A new
// endpoint's secret goes through the sealed flash, so a refresh shows it no more.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  createWebhook,
  deleteWebhook,
  EVENT_TYPES,
  listDeliveries,
  listWebhooks,
  parseSettings,
  readSettings,
  replayEvent,
  settingsView,
  writeSettings,
} from '../alerts/index.ts';
import { creditsOfAmount, type DisplayCurrency } from '../core/money.ts';
import { limitValue } from './amounts.ts';
import type { DashboardDeps } from './deps.ts';
import { doneNotice } from './done-notice.ts';
import { createFlashStore } from './flash.ts';
import { type FormBody, formOf } from './form.ts';
import { type Html, html } from './html.ts';
import { type MessageKey, type Ui, uiFor } from './i18n.ts';
import { csrfField, sendPage } from './layout.ts';
import { type FormState, orRefusedForm, refusal, shownValue } from './refused-form.ts';
import { ownerActor, sessionOf, sessionSecretOf } from './session-http.ts';

const PATH = '/dashboard/webhooks';
const SETTING_FIELDS = [
  'balance_percent_of_last_top_up',
  'balance_credits',
  'key_monthly_limit_percent',
  'key_daily_limit_percent',
  'credits_expiring_days',
] as const;
const LABELS: Record<(typeof SETTING_FIELDS)[number], MessageKey> = {
  balance_percent_of_last_top_up: 'wh.label.balance_percent',
  balance_credits: 'wh.label.balance_credits',
  key_monthly_limit_percent: 'wh.label.key_monthly',
  key_daily_limit_percent: 'wh.label.key_daily',
  credits_expiring_days: 'wh.label.credits_expiring',
};
/** An event as a label: English keeps the API's name as code (what a receiver reads); Korean says it in words. */
const eventLabel = (ui: Ui, event: string): Html =>
  ui.locale === 'en' ? html`<code>${event}</code>` : html`${ui.word('wh.event', event)}`;

const DONE: Record<string, MessageKey> = { saved: 'wh.done.saved', deleted: 'wh.done.deleted', replayed: 'wh.done.replayed' };

/**
 * The form's number lists (`20, 5`) as the door's JSON lists; text that is not a number is left for the check
 * to refuse. Balance thresholds may be typed as amounts too (`₩50,000, $5`, read by core/money.ts's one
 * reader), so there a comma between groups of three digits belongs to the number, not the list.
 */
function settingsBody(form: FormBody, currency: DisplayCurrency | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of SETTING_FIELDS) {
    if (!(f in form)) continue;
    const amounts = f === 'balance_credits';
    out[f] = form[f]!.split(amounts ? /\s+|,\s*(?!\d{3}(?:\D|$))/ : /[\s,]+/)
      .filter(Boolean)
      .map((v) => {
        if (/^\d{1,15}$/.test(v)) return Number(v);
        const read = amounts ? creditsOfAmount(v, currency) : null;
        return read && 'credits' in read ? Number(read.credits) : v;
      });
  }
  return out;
}

/** A saved setting as its field shows it: balance thresholds as money where that reads back to the same credits. */
function savedSetting(ui: Ui, field: string, saved: number | number[] | null | undefined): string {
  const list = [saved ?? []].flat();
  return (field === 'balance_credits' ? list.map((n) => limitValue(ui, n)) : list).join(', ');
}

export function registerWebhooksPage(scope: FastifyInstance, deps: DashboardDeps): void {
  const alerts = deps.alerts;
  if (!alerts) return;
  const flash = createFlashStore(deps.db, deps.clock);
  const takeSecret = async (req: FastifyRequest) => {
    const secret = sessionSecretOf(req);
    const note = secret ? ((await flash.take(secret)) as { kind?: string; id?: string; secret?: string } | null) : null;
    return note?.kind === 'webhook-secret' ? note : null;
  };

  /** The page, also answered (400) by a refused form, which comes back filled in with the reason. */
  const sendWebhooksPage = async (req: FastifyRequest, reply: FastifyReply, status: number, state?: FormState) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const settings = settingsView(await readSettings(deps.db, s.walletId));
    const hooks = await listWebhooks(deps.db, s.walletId);
    const deliveries = await Promise.all(hooks.map((h) => listDeliveries(deps.db, s.walletId, h.id, 10)));
    const made = state ? null : await takeSecret(req);
    // A refused webhook form keeps the events as ticked; a fresh one has them all ticked.
    const ticked = (e: string) => (state?.target === 'webhook' ? `event:${e}` in state.values : true);
    return sendPage(reply, status, {
      title: t('wh.title'),
      signedIn: { section: 'webhooks', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${state ? '' : doneNotice(req, ui, DONE)}
${made ? html`<section class="notice" role="note"><h2>${t('wh.secret_heading', { id: made.id ?? '' })}</h2><p>${ui.th('wh.secret_note')}</p><p><code id="wh-secret">${made.secret}</code></p></section>` : ''}
<p>${t('wh.intro')}</p>
<form method="post" action="${PATH}/thresholds">${csrfField(s.csrfToken)}
<fieldset><legend>${t('wh.thresholds')}</legend>${refusal(state, 'thresholds', 'error-thresholds')}${SETTING_FIELDS.map(
        (f) =>
          html`<label for="th-${f}">${t(LABELS[f])}</label><input id="th-${f}" name="${f}" value="${shownValue(state, 'thresholds', f, savedSetting(ui, f, settings[f]))}">`,
      )}
<p><button type="submit">${t('wh.save')}</button></p></fieldset></form>
<form method="post" action="${PATH}">${csrfField(s.csrfToken)}
<fieldset><legend>${t('wh.add')}</legend>${refusal(state, 'webhook', 'error-webhook')}
<label for="wh-url">${t('wh.url')}</label><input id="wh-url" name="url" type="url" required maxlength="2000" value="${shownValue(state, 'webhook', 'url', '')}">
${EVENT_TYPES.map((e) => html`<label><input type="checkbox" name="event:${e}"${ticked(e) ? html` checked` : ''}> ${eventLabel(ui, e)}</label>`)}
<p><button type="submit">${t('wh.add_button')}</button></p></fieldset></form>
${
  hooks.length === 0
    ? html`<p>${t('wh.none')}</p>`
    : hooks.map(
        (h, i) => html`<section data-webhook-id="${h.id}"><h2><code>${h.url}</code></h2>
<p>${t('wh.events')} ${h.events.map((e, j) => html`${j > 0 ? ', ' : ''}${eventLabel(ui, e)}`)} · ${t('wh.added')} ${ui.time(h.created_at)}</p>
<form method="post" action="${PATH}/${encodeURIComponent(h.id)}/delete">${csrfField(s.csrfToken)}<button type="submit">${t('wh.delete')}</button></form>
${
  deliveries[i]!.length === 0
    ? html`<p>${t('wh.no_deliveries')}</p>`
    : html`<div class="scroll"><table><caption>${t('wh.recent')}</caption>
<thead><tr><th scope="col">${t('wh.col.event')}</th><th scope="col">${t('wh.col.state')}</th><th scope="col">${t('wh.col.attempts')}</th><th scope="col">${t('wh.col.actions')}</th></tr></thead>
<tbody>${deliveries[i]!.map(
        (
          d,
        ) => html`<tr><td>${eventLabel(ui, d.event_type)}<br><small><code>${d.event_id}</code></small></td><td>${ui.word('wh.state', d.state)}</td>
<td>${d.attempts.map((a) => html`${a.n}: ${a.status_code ?? a.error ?? '—'} (${ui.int(a.duration_ms)} ms) ${ui.time(a.at)}<br>`)}</td>
<td><form method="post" action="${PATH}/${encodeURIComponent(h.id)}/events/${encodeURIComponent(d.event_id)}/replay">${csrfField(s.csrfToken)}<button type="submit">${t('wh.replay')}</button></form></td></tr>`,
      )}</tbody></table></div>`
}</section>`,
      )
}`,
    });
  };

  scope.get(PATH, (req, reply) => sendWebhooksPage(req, reply, 200));

  /** Runs a form's change; a 400 answers this page with the form as typed and the reason in words. */
  const orRefused = (req: FastifyRequest, reply: FastifyReply, target: string, change: () => Promise<FastifyReply>) =>
    orRefusedForm(req, target, change, (state) => sendWebhooksPage(req, reply, 400, state));

  scope.post(`${PATH}/thresholds`, (req, reply) =>
    orRefused(req, reply, 'thresholds', async () => {
      const s = sessionOf(req);
      const next = parseSettings(settingsBody(formOf(req.body), uiFor(req).currency), await readSettings(deps.db, s.walletId));
      await writeSettings(alerts.store, s.walletId, next, ownerActor(req));
      return reply.code(303).header('location', `${PATH}?done=saved`).send();
    }),
  );

  // No event ticked is refused with the form's words (tick at least one): unticking them all is a slip, and
  // a webhook that says nothing is no use, so the form does not quietly send every event the way the API does.
  scope.post(PATH, (req, reply) =>
    orRefused(req, reply, 'webhook', async () => {
      const s = sessionOf(req);
      const form = formOf(req.body);
      const events = EVENT_TYPES.filter((t) => `event:${t}` in form);
      const made = await createWebhook(alerts.store, s.walletId, { url: form.url ?? '', events }, ownerActor(req));
      const secret = sessionSecretOf(req);
      if (secret) await flash.put(secret, { kind: 'webhook-secret', id: made.id, secret: made.secret });
      return reply.code(303).header('location', PATH).send();
    }),
  );

  scope.post<{ Params: { id: string } }>(`${PATH}/:id/delete`, async (req, reply) => {
    await deleteWebhook(alerts.store, sessionOf(req).walletId, req.params.id, ownerActor(req));
    return reply.code(303).header('location', `${PATH}?done=deleted`).send();
  });

  scope.post<{ Params: { id: string; event: string } }>(`${PATH}/:id/events/:event/replay`, async (req, reply) => {
    await replayEvent(deps.db, sessionOf(req).walletId, req.params.id, req.params.event);
    alerts.queued();
    return reply.code(303).header('location', `${PATH}?done=replayed`).send();
  });

  // A GET of an action's address (a bookmarked form target) goes back to the page rather than a 404.
  scope.get(`${PATH}/thresholds`, async (_req, reply) => reply.code(303).header('location', PATH).send());
}
