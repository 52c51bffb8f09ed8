// /dashboard/management-keys: the owner's keys for the key-management doors. Created here (shown once),
// closed here; they stop by themselves when the wallet changes owner (keys/service.ts).
import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.ts';
import { closeManagementKey, listManagementKeys } from '../keys/manage.ts';
import { closeButton, isConfirmed, sendCloseConfirmation } from './confirm-close.ts';
import { MANAGEMENT_KEY_CREATED_PATH, managementKeyWarning, type NewKeysFlash } from './created-keys-page.ts';
import type { DashboardDeps } from './deps.ts';
import { formOf } from './form.ts';
import { html } from './html.ts';
import { uiFor } from './i18n.ts';
import { csrfField, sendPage } from './layout.ts';
import { sessionMay } from './roles.ts';
import { ownerActor, sessionOf } from './session-http.ts';

const MAX_NAME = 40;

export function registerManagementKeysPage(scope: FastifyInstance, deps: DashboardDeps, flash: NewKeysFlash): void {
  scope.get('/dashboard/management-keys', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const list = await listManagementKeys(deps.db, s.walletId);
    const closed = (req.query as Record<string, unknown>).done === 'closed';
    // Others read the list; making and closing management keys is the owner's (roles.ts).
    const owner = sessionMay(req, 'owner');
    return sendPage(reply, 200, {
      title: t('nav.management_keys'),
      signedIn: { section: 'management-keys', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${closed ? html`<p class="ok" role="status">${t('mk.closed')}</p>` : ''}
${managementKeyWarning(ui)}
<p>${ui.th('mk.intro')}</p>
${
  owner
    ? html`<form method="post" action="/dashboard/management-keys">${csrfField(s.csrfToken)}
<fieldset><legend>${t('mk.create_legend')}</legend>
<label for="mk-name">${t('mk.name_optional')}</label><input id="mk-name" name="name" maxlength="${MAX_NAME}">
<p><button type="submit">${t('mk.create')}</button></p></fieldset></form>`
    : ''
}
${
  list.length === 0
    ? html`<p>${t('mk.none')}</p>`
    : html`<div class="scroll"><table><caption>${t('mk.caption')}</caption>
<thead><tr><th scope="col">${t('col.name')}</th><th scope="col">${t('col.key')}</th><th scope="col">${t('col.created')}</th><th scope="col">${t('col.last_used')}</th><th scope="col">${t('col.actions')}</th></tr></thead>
<tbody>${list.map(
        (
          k,
        ) => html`<tr data-key-id="${k.id}"><td>${k.name ?? html`<em>${t('unnamed')}</em>`}</td><td><code>${k.key_prefix}</code></td><td>${ui.time(k.created_at)}</td><td>${ui.time(k.last_used_at)}</td>
<td>${owner ? closeButton(ui, `/dashboard/management-keys/${encodeURIComponent(k.id)}/close`, k.name ?? k.key_prefix) : ''}</td></tr>`,
      )}</tbody></table></div>`
}`,
    });
  });

  scope.post('/dashboard/management-keys', async (req, reply) => {
    const s = sessionOf(req);
    const raw = formOf(req.body).name?.trim() ?? '';
    if ([...raw].length > MAX_NAME) throw errors.invalidRequest(uiFor(req).t('mk.name_too_long', { max: MAX_NAME }), 'name');
    const made = await deps.keys.createManagementKey(s.walletId, raw === '' ? null : raw.normalize('NFC'), ownerActor(req));
    await flash.managementKey(req, made);
    return reply.code(303).header('location', MANAGEMENT_KEY_CREATED_PATH).send();
  });

  scope.get<{ Params: { id: string } }>('/dashboard/management-keys/:id/close', async (req, reply) => {
    const s = sessionOf(req);
    const { t } = uiFor(req);
    const k = (await listManagementKeys(deps.db, s.walletId)).find((m) => m.id === req.params.id);
    if (!k) throw errors.notFound(t('mk.not_found', { id: req.params.id }));
    return sendCloseConfirmation(reply, s, {
      section: 'management-keys',
      kindText: t('mk.kind'),
      label: k.name ?? k.key_prefix,
      consequence: t('mk.close_consequence'),
      closePath: `/dashboard/management-keys/${encodeURIComponent(k.id)}/close`,
      backPath: '/dashboard/management-keys',
    });
  });

  scope.post<{ Params: { id: string } }>('/dashboard/management-keys/:id/close', async (req, reply) => {
    const s = sessionOf(req);
    if (!isConfirmed(formOf(req.body))) {
      return reply
        .code(303)
        .header('location', `/dashboard/management-keys/${encodeURIComponent(req.params.id)}/close`)
        .send();
    }
    await closeManagementKey(deps, s.walletId, req.params.id, ownerActor(req));
    return reply.code(303).header('location', '/dashboard/management-keys?done=closed').send();
  });
}
