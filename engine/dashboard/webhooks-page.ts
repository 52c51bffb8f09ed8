// /dashboard/webhooks: the owner's alert thresholds and webhook endpoints, on the same functions as the
// /v1/webhooks and /v1/alerts doors (engine/alerts), as the signed-in owner (the audit trail's actor). A new
// endpoint's signing secret is shown once: the POST leaves it in the session's sealed flash and redirects here
// (post/redirect/get), so a refresh shows it no more. Recent deliveries list each attempt; replay re-sends.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createWebhook, deleteWebhook, EVENT_TYPES, listDeliveries, listWebhooks, parseSettings, readSettings, replayEvent, settingsView, writeSettings } from '../alerts/index.ts';
import type { DashboardDeps } from './deps.ts';
import { createFlashStore } from './flash.ts';
import { formOf, type FormBody } from './form.ts';
import { html, koreanTime } from './html.ts';
import { csrfField, sendPage } from './layout.ts';
import { ownerActor, sessionOf, sessionSecretOf } from './session-http.ts';

const PATH = '/dashboard/webhooks';
const SETTING_FIELDS = ['balance_percent_of_last_top_up', 'balance_credits', 'key_monthly_limit_percent', 'key_daily_limit_percent'] as const;
const LABELS: Record<(typeof SETTING_FIELDS)[number], string> = {
  balance_percent_of_last_top_up: 'Balance: percent of the last top-up',
  balance_credits: 'Balance: credits',
  key_monthly_limit_percent: "Keys: percent of the monthly limit",
  key_daily_limit_percent: "Keys: percent of the daily limit",
};
const DONE: Record<string, string> = { saved: 'The thresholds were saved.', deleted: 'The webhook was deleted.', replayed: 'The event was queued to be sent again.' };

/** The form's number lists (`20, 5`) as the door's JSON lists; text that is not a number is left for the check to refuse. */
function settingsBody(form: FormBody): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of SETTING_FIELDS) {
    if (!(f in form)) continue;
    out[f] = form[f].split(/[\s,]+/).filter(Boolean).map((v) => (/^\d{1,15}$/.test(v) ? Number(v) : v));
  }
  return out;
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

  scope.get(PATH, async (req, reply) => {
    const s = sessionOf(req);
    const settings = settingsView(await readSettings(deps.db, s.walletId));
    const hooks = await listWebhooks(deps.db, s.walletId);
    const deliveries = await Promise.all(hooks.map((h) => listDeliveries(deps.db, s.walletId, h.id, 10)));
    const made = await takeSecret(req);
    const done = DONE[String((req.query as Record<string, unknown>).done ?? '')];
    return sendPage(reply, 200, {
      title: 'Alerts and webhooks',
      signedIn: { section: 'webhooks', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${done ? html`<p class="ok" role="status">${done}</p>` : ''}
${made ? html`<section class="notice" role="note"><h2>Signing secret of webhook ${made.id}</h2><p>Shown once. Keep it on the server that receives the webhooks; it verifies each delivery's <code>x-gateway-signature</code>.</p><p><code id="wh-secret">${made.secret}</code></p></section>` : ''}
<p>Alerts fire once when a threshold is crossed, and again only after a top-up (balance) or a limit reset or raise (keys) lifts it back.
Lists are whole numbers separated by commas; an empty list turns that alert off.</p>
<form method="post" action="${PATH}/thresholds">${csrfField(s.csrfToken)}
<fieldset><legend>Thresholds</legend>${SETTING_FIELDS.map(
        (f) => html`<label for="th-${f}">${LABELS[f]}</label><input id="th-${f}" name="${f}" value="${settings[f].join(', ')}">`,
      )}
<p><button type="submit">Save thresholds</button></p></fieldset></form>
<form method="post" action="${PATH}">${csrfField(s.csrfToken)}
<fieldset><legend>Add a webhook</legend>
<label for="wh-url">URL (https)</label><input id="wh-url" name="url" type="url" required maxlength="2000">
${EVENT_TYPES.map((t) => html`<label><input type="checkbox" name="event:${t}" checked> <code>${t}</code></label>`)}
<p><button type="submit">Add webhook</button></p></fieldset></form>
${hooks.length === 0 ? html`<p>No webhooks.</p>` : hooks.map(
        (h, i) => html`<section data-webhook-id="${h.id}"><h2><code>${h.url}</code></h2>
<p>Events: ${h.events.map((e) => html`<code>${e}</code> `)} · added ${koreanTime(h.created_at)}</p>
<form method="post" action="${PATH}/${encodeURIComponent(h.id)}/delete">${csrfField(s.csrfToken)}<button type="submit">Delete this webhook</button></form>
${deliveries[i].length === 0 ? html`<p>No deliveries yet.</p>` : html`<div class="scroll"><table><caption>Recent deliveries</caption>
<thead><tr><th scope="col">Event</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Actions</th></tr></thead>
<tbody>${deliveries[i].map(
            (d) => html`<tr><td><code>${d.event_type}</code><br><small>${d.event_id}</small></td><td>${d.state}</td>
<td>${d.attempts.map((a) => html`${a.n}: ${a.status_code ?? a.error ?? '—'} (${a.duration_ms} ms) ${koreanTime(a.at)}<br>`)}</td>
<td><form method="post" action="${PATH}/${encodeURIComponent(h.id)}/events/${encodeURIComponent(d.event_id)}/replay">${csrfField(s.csrfToken)}<button type="submit">Replay</button></form></td></tr>`,
          )}</tbody></table></div>`}</section>`,
      )}`,
    });
  });

  scope.post(PATH + '/thresholds', async (req, reply) => {
    const s = sessionOf(req);
    const next = parseSettings(settingsBody(formOf(req.body)), await readSettings(deps.db, s.walletId));
    await writeSettings(alerts.store, s.walletId, next, ownerActor(req));
    return reply.code(303).header('location', `${PATH}?done=saved`).send();
  });

  scope.post(PATH, async (req, reply) => {
    const s = sessionOf(req);
    const form = formOf(req.body);
    const events = EVENT_TYPES.filter((t) => `event:${t}` in form);
    const made = await createWebhook(alerts.store, s.walletId, { url: form.url ?? '', events }, ownerActor(req));
    const secret = sessionSecretOf(req);
    if (secret) await flash.put(secret, { kind: 'webhook-secret', id: made.id, secret: made.secret });
    return reply.code(303).header('location', PATH).send();
  });

  scope.post<{ Params: { id: string } }>(PATH + '/:id/delete', async (req, reply) => {
    await deleteWebhook(alerts.store, sessionOf(req).walletId, req.params.id, ownerActor(req));
    return reply.code(303).header('location', `${PATH}?done=deleted`).send();
  });

  scope.post<{ Params: { id: string; event: string } }>(PATH + '/:id/events/:event/replay', async (req, reply) => {
    await replayEvent(deps.db, sessionOf(req).walletId, req.params.id, req.params.event);
    alerts.queued();
    return reply.code(303).header('location', `${PATH}?done=replayed`).send();
  });

  // A GET of an action's address (a bookmarked form target) goes back to the page rather than a 404.
  scope.get(PATH + '/thresholds', async (_req, reply) => reply.code(303).header('location', PATH).send());
}
