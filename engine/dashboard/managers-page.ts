// /dashboard/managers: the owner lets people in by the identity the school's provider gives them (subject or
// e-mail, as GATEWAY_OIDC_MATCH says), each with a role, and takes them out again. The owner's page alone
// (roles.ts); each change is in the audit trail with the owner (or owner-role manager) as actor.
import type { FastifyInstance } from 'fastify';
import { listManagers, normalizeIdentity, parseRole, removeManager, ROLES, setManager } from '../identity/managers.ts';
import type { DashboardDeps } from './deps.ts';
import { formOf } from './form.ts';
import { html, koreanTime } from './html.ts';
import { csrfField, sendPage } from './layout.ts';
import { ownerActor, sessionOf } from './session-http.ts';

const PATH = '/dashboard/managers';

const ROLE_HELP = html`<ul>
<li><strong>owner</strong>: everything the owner does, managers included.</li>
<li><strong>manager</strong>: creates, changes and closes API keys; reads usage and exports it.</li>
<li><strong>viewer</strong>: reads every page; changes nothing.</li>
</ul>`;

const DONE: Record<string, string> = {
  added: 'The manager was added. They can sign in now.',
  changed: "The manager's role was changed. It holds from their next page.",
  unchanged: 'That manager already had this role; nothing changed.',
  removed: 'The manager was removed. Their session ends at their next page.',
};

export function registerManagersPage(scope: FastifyInstance, deps: DashboardDeps): void {
  const matchBy = deps.identity?.settings.matchBy ?? 'subject';
  const what = matchBy === 'email' ? 'e-mail address' : 'subject (the user id your school\u2019s sign-in gives)';

  scope.get(PATH, async (req, reply) => {
    const s = sessionOf(req);
    const list = await listManagers(deps.db, s.walletId);
    const done = DONE[String((req.query as Record<string, unknown>).done ?? '')];
    return sendPage(reply, 200, {
      title: 'Managers',
      signedIn: { section: 'managers', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${done ? html`<p class="ok" role="status">${done}</p>` : ''}
${deps.identity ? html`<p>People sign in with ${deps.identity.settings.name}. Add them by their ${what}.</p>` : html`<p class="notice" role="note">No identity provider is configured, so managers cannot sign in yet: your operator sets <code>GATEWAY_OIDC_ISSUER</code> and its client.</p>`}
${ROLE_HELP}
<form method="post" action="${PATH}">${csrfField(s.csrfToken)}
<fieldset><legend>Add a manager or change a role</legend>
<label for="mgr-identity">Their ${what}</label><input id="mgr-identity" name="identity" maxlength="200" required>
<label for="mgr-role">Role</label><select id="mgr-role" name="role">${ROLES.map((r) => html`<option value="${r}"${r === 'manager' ? html` selected` : ''}>${r}</option>`)}</select>
<p><button type="submit">Save manager</button></p></fieldset></form>
${
  list.length === 0
    ? html`<p data-testid="empty">No managers: only you sign in to this wallet.</p>`
    : html`<div class="scroll"><table><caption>People who may sign in besides the owner</caption>
<thead><tr><th scope="col">Identity</th><th scope="col">Role</th><th scope="col">Added by</th><th scope="col">Added</th><th scope="col">Actions</th></tr></thead>
<tbody>${list.map(
        (m) => html`<tr data-manager="${m.identity}"><td>${m.identity}</td><td>${m.role}</td><td>${m.addedBy}</td><td>${koreanTime(m.addedAt.toISOString())}</td>
<td><form method="post" action="${PATH}/remove">${csrfField(s.csrfToken)}<input type="hidden" name="identity" value="${m.identity}"><button type="submit">Remove ${m.identity}</button></form></td></tr>`,
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
