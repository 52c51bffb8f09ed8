// /dashboard/keys: the list the key doors give, and the changes they allow (create one or many with
// numbered names, change limits and expiry, close), each through the same keys/manage.ts function the door
// calls, so a raised limit lifts a 429 at once and a closed key is refused at once, in every process.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { koreanDate } from '../core/clock.ts';
import { type GroupChoice, type GroupScope, groupChoices } from '../keys/groups.ts';
import { closeApiKey, createKeys, getKey, listKeys, patchKey, walletForKeys } from '../keys/manage.ts';
import { countSlotKeys } from '../keys/store.ts';
import { parseCreate, parseListQuery, parsePatch } from '../keys/validate.ts';
import { isConfirmed, sendCloseConfirmation } from './confirm-close.ts';
import { API_KEYS_CREATED_PATH, type NewKeysFlash } from './created-keys-page.ts';
import type { DashboardDeps } from './deps.ts';
import { doneNotice } from './done-notice.ts';
import { doorBody, formOf, limitFields, modelsField, newKeysBody, queryText } from './form.ts';
import { checkTeacherChange, groupScopeOf, teacherMoveGuard } from './group-scope.ts';
import { type Html, html } from './html.ts';
import { type MessageKey, type Ui, uiFor } from './i18n.ts';
import { createForm, type KeyRows, keyRow, keyTableHead } from './keys-forms.ts';
import { sendPage } from './layout.ts';
import { type FormState, orRefusedForm } from './refused-form.ts';
import { sessionMay } from './roles.ts';
import { ownerActor, sessionOf } from './session-http.ts';

const PAGE_SIZE = 100;

const DONE: Record<string, MessageKey> = { changed: 'keys.done.changed', closed: 'keys.done.closed' };

/**
 * Which keys the list shows (`?class=`): one class's, the keys in no class (`none`), or every key the session may
 * see. A class not among the session's choices shows every key, as no filter.
 */
function classFilter(query: unknown, choices: readonly GroupChoice[], scope: GroupScope) {
  const asked = queryText(query, 'class', 64) ?? '';
  if (asked === 'none' && scope === null) return { asked, groupIds: 'none' as const };
  if (choices.some((c) => c.id === asked)) return { asked, groupIds: [asked] };
  return { asked: '', groupIds: scope ?? undefined };
}

function filterForm(ui: Ui, choices: readonly GroupChoice[], asked: string, scope: GroupScope): Html {
  const { t } = ui;
  const opt = (value: string, text: string) => html`<option value="${value}"${value === asked ? html` selected` : ''}>${text}</option>`;
  return html`<form method="get" action="/dashboard/keys" data-testid="class-filter"><fieldset><legend>${t('keys.filter_legend')}</legend>
<label for="f-class">${t('keys.filter_class')}</label><select id="f-class" name="class">${opt('', t('keys.every_class'))}${
    scope === null ? opt('none', t('keys.no_class')) : ''
  }${choices.map((c) => opt(c.id, c.name))}</select>
<button type="submit">${t('keys.filter_apply')}</button></fieldset></form>`;
}

/** The page, also answered (400) by a refused form, which comes back filled in with the reason. */
async function sendKeysPage(deps: DashboardDeps, req: FastifyRequest, reply: FastifyReply, status: number, state?: FormState) {
  const s = sessionOf(req);
  const ui = uiFor(req);
  const { t } = ui;
  const { offset } = parseListQuery(req.query);
  const today = koreanDate(deps.clock.now());
  // A teacher sees their classes' keys only, and makes keys on a class's page (group-scope.ts).
  const scope = groupScopeOf(req);
  const [wallet, choices] = await Promise.all([walletForKeys(deps.db, s.walletId), groupChoices(deps.db, s.walletId, scope)]);
  const filter = classFilter(req.query, choices, scope);
  // The slots are the wallet's, whichever class the list is filtered to.
  const [{ data, total }, slotsUsed] = await Promise.all([
    listKeys(deps, s.walletId, { limit: PAGE_SIZE, offset, ...(filter.groupIds ? { groupIds: filter.groupIds } : {}) }),
    scope ? Promise.resolve(0) : countSlotKeys(deps.db, s.walletId, today),
  ]);
  const done = state ? '' : doneNotice(req, ui, DONE);
  const more = offset + data.length < total;
  // A viewer reads: no create form, no change or close buttons (roles.ts refuses them anyway).
  const rows: KeyRows = {
    csrf: s.csrfToken,
    splitsUsage: wallet.splitsUsage,
    today,
    state,
    canChange: sessionMay(req, 'keys'),
    classes: choices,
    wholeWallet: scope === null,
    classColumn: choices.length > 0,
  };
  const page = (at: number) =>
    `/dashboard/keys?${new URLSearchParams({ ...(filter.asked ? { class: filter.asked } : {}), offset: String(at) })}`;
  return sendPage(reply, status, {
    title: t('nav.keys'),
    signedIn: { section: 'keys', csrfToken: s.csrfToken, walletId: s.walletId },
    body: html`${done}
<p data-testid="keys-intro">${
      // A teacher makes keys on their class's page within the class's limits; the wallet's key slots are the owner's.
      scope
        ? t('keys.intro.classes', { active: ui.int(total) })
        : t('keys.intro', { active: ui.int(slotsUsed), slots: ui.int(wallet.keySlots) })
    }</p>
${rows.canChange && !scope ? createForm(ui, rows) : ''}
${choices.length > 0 ? filterForm(ui, choices, filter.asked, scope) : ''}
${
  total === 0
    ? html`<p data-testid="empty">${t('keys.empty')}</p>`
    : html`<div class="scroll"><table>
<caption>${t('keys.caption')}</caption>
${keyTableHead(ui, rows)}
<tbody>${data.map((k) => keyRow(ui, k, rows))}</tbody>
</table></div>`
}
<nav aria-label="${t('layout.pages')}">${offset > 0 ? html`<a href="${page(Math.max(0, offset - PAGE_SIZE))}">${t('keys.newer')}</a> ` : ''}${
      more ? html`<a href="${page(offset + PAGE_SIZE)}">${t('keys.older')}</a>` : ''
    }</nav>`,
  });
}

export function registerKeysPage(scope: FastifyInstance, deps: DashboardDeps, flash: NewKeysFlash): void {
  /** Runs a form's change; a 400 answers the keys page with the form as typed and the reason in words. */
  const orRefusedKeysForm = (req: FastifyRequest, reply: FastifyReply, target: string, change: () => Promise<FastifyReply>) =>
    orRefusedForm(req, target, change, (state) => sendKeysPage(deps, req, reply, 400, state));

  scope.get('/dashboard/keys', (req, reply) => sendKeysPage(deps, req, reply, 200));

  scope.post('/dashboard/keys', (req, reply) =>
    orRefusedKeysForm(req, reply, 'new', async () => {
      const s = sessionOf(req);
      const ui = uiFor(req);
      const body = newKeysBody(formOf(req.body), ui);
      const made = await createKeys(deps, s.walletId, parseCreate(body, koreanDate(deps.clock.now())), ownerActor(req));
      await flash.apiKeys(req, made);
      return reply.code(303).header('location', API_KEYS_CREATED_PATH).send();
    }),
  );

  scope.post<{ Params: { id: string } }>('/dashboard/keys/:id', (req, reply) =>
    orRefusedKeysForm(req, reply, req.params.id, async () => {
      const s = sessionOf(req);
      const ui = uiFor(req);
      const form = formOf(req.body);
      if (groupScopeOf(req) !== null) checkTeacherChange(req, form, await getKey(deps, s.walletId, req.params.id));
      const body = {
        ...doorBody(form, { text: ['name', 'audience', 'expires_on', 'group_id'], amounts: limitFields(ui) }, 'null', ui),
        ...modelsField(form, 'null'),
      };
      const now = deps.clock.now();
      await patchKey(deps, s.walletId, req.params.id, parsePatch(body, koreanDate(now)), ownerActor(req), teacherMoveGuard(req, now));
      return reply.code(303).header('location', '/dashboard/keys?done=changed').send();
    }),
  );

  // A refused change is answered at the address it was posted to; reloaded or bookmarked, that address is the list.
  scope.get('/dashboard/keys/:id', (_req, reply) => reply.code(303).header('location', '/dashboard/keys').send());

  scope.get<{ Params: { id: string } }>('/dashboard/keys/:id/close', async (req, reply) => {
    const s = sessionOf(req);
    const k = await getKey(deps, s.walletId, req.params.id);
    const path = `/dashboard/keys/${encodeURIComponent(k.id)}/close`;
    const { t } = uiFor(req);
    return sendCloseConfirmation(reply, s, {
      section: 'keys',
      kindText: t('keys.kind'),
      label: k.name ?? k.key_prefix,
      consequence: t('keys.close_consequence'),
      closePath: path,
      backPath: '/dashboard/keys',
    });
  });

  scope.post<{ Params: { id: string } }>('/dashboard/keys/:id/close', async (req, reply) => {
    const s = sessionOf(req);
    if (!isConfirmed(formOf(req.body)))
      return reply
        .code(303)
        .header('location', `/dashboard/keys/${encodeURIComponent(req.params.id)}/close`)
        .send();
    await closeApiKey(deps, s.walletId, req.params.id, ownerActor(req));
    return reply.code(303).header('location', '/dashboard/keys?done=closed').send();
  });
}
