// /dashboard/managers: the owner lets people in by the identity the school's provider gives them (subject or
// e-mail, as GATEWAY_OIDC_MATCH says), each with a role, and takes them out again. The owner's page alone
// (roles.ts); each change is in the audit trail with the owner (or owner-role manager) as actor.
import type { FastifyInstance } from 'fastify';
import { listManagers, normalizeIdentity, parseRole, ROLES, type Role, removeManager, setManager } from '../identity/managers.ts';
import type { DashboardDeps } from './deps.ts';
import { doneNotice } from './done-notice.ts';
import { formOf } from './form.ts';
import { html } from './html.ts';
import { type MessageKey, type Ui, uiFor } from './i18n.ts';
import { csrfField, sendPage } from './layout.ts';
import { ownerActor, sessionOf } from './session-http.ts';

const PATH = '/dashboard/managers';

/** What the page calls a role; the form's option values stay the roles' own names. */
const roleName = (ui: Ui, r: Role) => ui.t(`managers.role.${r}`);

const roleHelp = (ui: Ui) => html`<ul>${ROLES.map((r) => html`<li>${ui.th(`managers.help.${r}`, { role: roleName(ui, r) })}</li>`)}</ul>`;

const DONE: Record<string, MessageKey> = {
  added: 'managers.done.added',
  changed: 'managers.done.changed',
  unchanged: 'managers.done.unchanged',
  removed: 'managers.done.removed',
};

export function registerManagersPage(scope: FastifyInstance, deps: DashboardDeps): void {
  const matchBy = deps.identity?.settings.matchBy ?? 'subject';
  const whatKey: MessageKey = matchBy === 'email' ? 'managers.by_email' : 'managers.by_subject';

  scope.get(PATH, async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const what = t(whatKey);
    const list = await listManagers(deps.db, s.walletId);
    return sendPage(reply, 200, {
      title: t('nav.managers'),
      signedIn: { section: 'managers', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${doneNotice(req, ui, DONE)}
${deps.identity ? html`<p>${t('managers.intro', { provider: deps.identity.settings.name, what })}</p>` : html`<p class="notice" role="note">${ui.th('managers.no_provider')}</p>`}
${roleHelp(ui)}
<form method="post" action="${PATH}">${csrfField(s.csrfToken)}
<fieldset><legend>${t('managers.legend')}</legend>
<label for="mgr-identity">${t('managers.field.identity', { what })}</label><input id="mgr-identity" name="identity" maxlength="200" required>
<label for="mgr-role">${t('managers.field.role')}</label><select id="mgr-role" name="role">${ROLES.map((r) => html`<option value="${r}"${r === 'manager' ? html` selected` : ''}>${roleName(ui, r)}</option>`)}</select>
<p><button type="submit">${t('managers.save')}</button></p></fieldset></form>
${
  list.length === 0
    ? html`<p data-testid="empty">${t('managers.empty')}</p>`
    : html`<div class="scroll"><table><caption>${t('managers.caption')}</caption>
<thead><tr><th scope="col">${t('managers.col.identity')}</th><th scope="col">${t('managers.col.role')}</th><th scope="col">${t('managers.col.added_by')}</th><th scope="col">${t('managers.col.added')}</th><th scope="col">${t('col.actions')}</th></tr></thead>
<tbody>${list.map(
        (
          m,
        ) => html`<tr data-manager="${m.identity}"><td>${m.identity}</td><td>${roleName(ui, m.role)}</td><td>${m.addedBy}</td><td>${ui.time(m.addedAt.toISOString())}</td>
<td><form method="post" action="${PATH}/remove">${csrfField(s.csrfToken)}<input type="hidden" name="identity" value="${m.identity}"><button type="submit">${t('managers.remove', { identity: m.identity })}</button></form></td></tr>`,
      )}</tbody></table></div>`
}`,
    });
  });

  scope.post(PATH, async (req, reply) => {
    const s = sessionOf(req);
    const form = formOf(req.body);
    const identity = normalizeIdentity(form.identity ?? '', matchBy);
    const outcome = await setManager(deps.db, s.walletId, identity, parseRole(form.role), ownerActor(req), deps.clock.now());
    return reply.code(303).header('location', `${PATH}?done=${outcome}`).send();
  });

  scope.post(`${PATH}/remove`, async (req, reply) => {
    const s = sessionOf(req);
    const identity = (formOf(req.body).identity ?? '').trim();
    await removeManager(deps.db, s.walletId, identity, ownerActor(req), deps.clock.now());
    return reply.code(303).header('location', `${PATH}?done=removed`).send();
  });
}
