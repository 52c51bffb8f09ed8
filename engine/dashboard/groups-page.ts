// /dashboard/groups: the wallet's classes, their keys' use against the class's limits, and a class's monthly CSV.
// Changes go through the functions the key doors call, so a raised class limit lifts a 429 at once everywhere.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { koreanDate } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { fromThrown } from '../http/reply-error.ts';
import { listManagers } from '../identity/managers.ts';
import { parseGroupCreate, parseGroupPatch } from '../keys/group-validate.ts';
import { createGroup, deleteGroup, getGroup, groupChoices, type KeyGroupRecord, listGroups, patchGroup } from '../keys/groups.ts';
import { createKeys, keyNamesById, listKeys, walletForKeys } from '../keys/manage.ts';
import { parseCreate } from '../keys/validate.ts';
import { rollupRows } from '../usage/daily-rollup.ts';
import { isConfirmed, sendConfirmation } from './confirm-close.ts';
import { API_KEYS_CREATED_PATH, type NewKeysFlash } from './created-keys-page.ts';
import type { DashboardDeps } from './deps.ts';
import { doneNotice } from './done-notice.ts';
import { doorBody, formOf, limitFields, newKeysBody } from './form.ts';
import { checkTeacherCreate, groupScopeOf, managerGroups, setManagerGroup } from './group-scope.ts';
import {
  CLASS_KEYS_TARGET,
  classKeysForm,
  GROUP_DELETE_TARGET,
  groupForm,
  groupFormTarget,
  groupRow,
  teachersBlock,
} from './groups-parts.ts';
import { type Html, html } from './html.ts';
import { type MessageKey, type Ui, uiFor } from './i18n.ts';
import { type KeyRows, keyRow, keyTableHead } from './keys-forms.ts';
import { sendPage } from './layout.ts';
import { usedText } from './limit-parts.ts';
import { type FormState, orRefusedForm } from './refused-form.ts';
import { sessionMay } from './roles.ts';
import { ownerActor, sessionOf } from './session-http.ts';
import { sendCsv, usageSummaryCsv } from './usage-csv.ts';

/** Whether the session may change classes themselves: the owner or a manager of the whole wallet, not a teacher. */
const mayEditGroups = (req: FastifyRequest) => sessionMay(req, 'keys') && groupScopeOf(req) === null;

const back = (reply: FastifyReply, path: string) => reply.code(303).header('location', path).send();

const classPath = (id: string) => `/dashboard/groups/${encodeURIComponent(id)}`;

const DONE: Record<string, MessageKey> = { created: 'groups.done.created', saved: 'groups.done.saved', deleted: 'groups.done.deleted' };

/** Days of a Korean month YYYY-MM, both inclusive; 400 naming `month` otherwise. */
function monthDays(month: string): { fromDay: string; toDay: string } {
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) throw errors.invalidRequest('month must be YYYY-MM.', 'month');
  const [y = 0, m = 0] = month.split('-').map(Number); // tested YYYY-MM above
  const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return { fromDay: `${month}-01`, toDay: `${month}-${String(last).padStart(2, '0')}` };
}

/** A class's page: its use against its limits, its keys, and for the owner who teaches it; `state`: a refused form. */
async function classPage(deps: DashboardDeps, req: FastifyRequest, ui: Ui, g: KeyGroupRecord, state?: FormState) {
  const s = sessionOf(req);
  const now = deps.clock.now();
  const today = koreanDate(now);
  const scope = groupScopeOf(req);
  const [wallet, classes] = await Promise.all([walletForKeys(deps.db, s.walletId), groupChoices(deps.db, s.walletId, scope)]);
  const { data } = await listKeys(deps, s.walletId, { limit: 500, offset: 0, groupIds: [g.id] });
  const canKeys = sessionMay(req, 'keys');
  const rows: KeyRows = {
    csrf: s.csrfToken,
    splitsUsage: wallet.splitsUsage,
    today,
    canChange: canKeys,
    classes,
    wholeWallet: scope === null,
    classColumn: false,
  };
  const teachers = sessionMay(req, 'owner') ? await teachersOf(deps, s.walletId, g.id) : null;
  const month = today.slice(0, 7);
  return html`${state ? '' : doneNotice(req, ui, DONE)}${limitReached(ui, g, mayEditGroups(req))}<dl><dt>${ui.t('keys.col.month')}</dt><dd data-testid="group-month">${usedText(ui, g.month_used_credits, g.monthly_limit_credits)}</dd>
<dt>${ui.t('keys.col.day')}</dt><dd data-testid="group-day">${usedText(ui, g.day_used_credits, g.daily_limit_credits)}</dd></dl>
<p><small>${ui.t('groups.closed_keys_count')}</small></p>
<p><a href="${classPath(g.id)}/usage.csv?month=${month}" download>${ui.t('groups.csv', { month })}</a></p>
${mayEditGroups(req) ? groupForm(ui, s.csrfToken, g, state) : ''}
${canKeys ? classKeysForm(ui, s.csrfToken, g.id, rows, state) : ''}
<h2>${ui.t('nav.keys')}</h2>
${
  data.length === 0
    ? html`<p data-testid="empty">${ui.t('groups.no_keys')}</p>`
    : html`<div class="scroll"><table><caption>${ui.t('groups.keys_caption', { name: g.name })}</caption>
${keyTableHead(ui, rows)}
<tbody>${data.map((k) => keyRow(ui, k, rows))}</tbody></table></div>`
}
${teachers ? teachersBlock(ui, s.csrfToken, g.id, teachers) : ''}`;
}

/**
 * A class whose day or month is used up refuses its keys' calls until it reopens: said at the top, with who can
 * lift it (a teacher cannot change the class's limits, so they are told to ask the owner).
 */
function limitReached(ui: Ui, g: KeyGroupRecord, mayRaise: boolean): Html | string {
  const full = (used: number, limit: number | null) => limit !== null && used >= limit;
  const period = full(g.month_used_credits, g.monthly_limit_credits)
    ? 'month'
    : full(g.day_used_credits, g.daily_limit_credits)
      ? 'day'
      : null;
  if (!period) return '';
  return html`<p class="notice" role="status" data-testid="limit-reached">${ui.t(`groups.reached_${period}`)} ${ui.t(mayRaise ? 'groups.reached_raise' : 'groups.reached_ask')}</p>`;
}

/** The wallet's managers (role manager), each with whether this class is one of theirs. */
async function teachersOf(deps: DashboardDeps, walletId: string, groupId: string) {
  const managers = (await listManagers(deps.db, walletId)).filter((m) => m.role === 'manager');
  return Promise.all(
    managers.map(async (m) => {
      const groups = await managerGroups(deps.db, walletId, m.identity);
      return { identity: m.identity, teaches: groups?.includes(groupId) ?? false, limited: groups !== null };
    }),
  );
}

/** The classes page, also answered (400) by a refused create form, which comes back filled in with the reason. */
async function sendGroupsPage(deps: DashboardDeps, req: FastifyRequest, reply: FastifyReply, status: number, state?: FormState) {
  const s = sessionOf(req);
  const ui = uiFor(req);
  const groups = await listGroups(deps, s.walletId, groupScopeOf(req));
  const month = koreanDate(deps.clock.now()).slice(0, 7);
  return sendPage(reply, status, {
    title: ui.t('nav.groups'),
    signedIn: { section: 'groups', csrfToken: s.csrfToken, walletId: s.walletId },
    body: html`${state ? '' : doneNotice(req, ui, DONE)}<p>${ui.t('groups.intro')}</p>
${mayEditGroups(req) ? groupForm(ui, s.csrfToken, null, state) : ''}
${
  groups.length === 0
    ? html`<p data-testid="empty">${ui.t('groups.empty')}</p>`
    : html`<div class="scroll"><table><caption>${ui.t('groups.caption')}</caption>
<thead><tr><th scope="col">${ui.t('col.name')}</th><th scope="col" class="num">${ui.t('groups.col.keys')}</th><th scope="col" class="num">${ui.t('keys.col.month')}</th><th scope="col" class="num">${ui.t('keys.col.day')}</th><th scope="col">${ui.t('groups.col.csv')}</th></tr></thead>
<tbody>${groups.map((g) => groupRow(ui, g, month))}</tbody></table></div>`
}`,
  });
}

/** A class's page, also answered (400) by its refused change or keys form, filled in with the reason. */
async function sendClassPage(deps: DashboardDeps, req: FastifyRequest, reply: FastifyReply, id: string, status: number, state?: FormState) {
  const s = sessionOf(req);
  const g = await getGroup(deps, s.walletId, id, groupScopeOf(req));
  return sendPage(reply, status, {
    title: g.name,
    signedIn: { section: 'groups', csrfToken: s.csrfToken, walletId: s.walletId },
    body: await classPage(deps, req, uiFor(req), g, state),
  });
}

export function registerGroupsPage(scope: FastifyInstance, deps: DashboardDeps, flash: NewKeysFlash): void {
  scope.get('/dashboard/groups', (req, reply) => sendGroupsPage(deps, req, reply, 200));

  scope.post('/dashboard/groups', (req, reply) =>
    orRefusedForm(
      req,
      groupFormTarget(null),
      async () => {
        const ui = uiFor(req);
        const body = { ...doorBody(formOf(req.body), { text: ['name'], amounts: limitFields(ui) }, 'omit', ui) };
        const g = await createGroup(deps, sessionOf(req).walletId, { ...parseGroupCreate(body), distinctName: true }, ownerActor(req));
        return back(reply, `${classPath(g.id)}?done=created`);
      },
      (state) => sendGroupsPage(deps, req, reply, 400, state),
    ),
  );

  scope.get<{ Params: { id: string } }>('/dashboard/groups/:id', (req, reply) => sendClassPage(deps, req, reply, req.params.id, 200));

  scope.post<{ Params: { id: string } }>('/dashboard/groups/:id', (req, reply) =>
    orRefusedForm(
      req,
      groupFormTarget(req.params.id),
      async () => {
        const ui = uiFor(req);
        const body = doorBody(formOf(req.body), { text: ['name'], amounts: limitFields(ui) }, 'null', ui);
        await patchGroup(deps, sessionOf(req).walletId, req.params.id, { ...parseGroupPatch(body), distinctName: true }, ownerActor(req));
        return back(reply, `${classPath(req.params.id)}?done=saved`);
      },
      (state) => sendClassPage(deps, req, reply, req.params.id, 400, state),
    ),
  );

  registerDeleteRoutes(scope, deps);
  registerClassRoutes(scope, deps, flash);
}

/** Deleting a class asks first; one that still has keys is refused on its page, saying how many and what to do. */
function registerDeleteRoutes(scope: FastifyInstance, deps: DashboardDeps): void {
  const refused = async (req: FastifyRequest, reply: FastifyReply, g: KeyGroupRecord) => {
    const message = uiFor(req).t('groups.delete_refused', { name: g.name, count: String(g.key_count) });
    return sendClassPage(deps, req, reply, g.id, 409, { target: GROUP_DELETE_TARGET, values: {}, message });
  };

  scope.get<{ Params: { id: string } }>('/dashboard/groups/:id/delete', async (req, reply) => {
    const s = sessionOf(req);
    const g = await getGroup(deps, s.walletId, req.params.id, groupScopeOf(req));
    if (g.key_count > 0) return refused(req, reply, g);
    const ui = uiFor(req);
    return sendConfirmation(reply, s, {
      section: 'groups',
      title: ui.t('groups.delete_title', { name: g.name }),
      notice: ui.th('groups.delete_notice', { name: g.name }),
      yes: ui.t('groups.delete_yes', { name: g.name }),
      actionPath: `${classPath(g.id)}/delete`,
      backPath: classPath(g.id),
    });
  });

  scope.post<{ Params: { id: string } }>('/dashboard/groups/:id/delete', async (req, reply) => {
    const { walletId } = sessionOf(req);
    if (!isConfirmed(formOf(req.body))) return back(reply, `${classPath(req.params.id)}/delete`);
    try {
      await deleteGroup(deps, walletId, req.params.id, ownerActor(req));
    } catch (err) {
      if (fromThrown(err).status !== 409) throw err;
      return refused(req, reply, await getGroup(deps, walletId, req.params.id, groupScopeOf(req)));
    }
    return back(reply, '/dashboard/groups?done=deleted');
  });
}

/** A class's keys, its teachers and its month's CSV. */
function registerClassRoutes(scope: FastifyInstance, deps: DashboardDeps, flash: NewKeysFlash): void {
  scope.post<{ Params: { id: string } }>('/dashboard/groups/:id/keys', (req, reply) =>
    orRefusedForm(
      req,
      CLASS_KEYS_TARGET,
      async () => {
        const s = sessionOf(req);
        const ui = uiFor(req);
        const form = formOf(req.body);
        const body = { ...newKeysBody(form, ui), group_id: req.params.id };
        await getGroup(deps, s.walletId, req.params.id, groupScopeOf(req)); // 404 before anything is made
        checkTeacherCreate(req, form.audience);
        const made = await createKeys(deps, s.walletId, parseCreate(body, koreanDate(deps.clock.now())), ownerActor(req));
        await flash.apiKeys(req, made);
        return back(reply, API_KEYS_CREATED_PATH);
      },
      (state) => sendClassPage(deps, req, reply, req.params.id, 400, state),
    ),
  );

  // A refused form is answered at the address it was posted to; reloaded or bookmarked, that address is the class.
  scope.get<{ Params: { id: string } }>('/dashboard/groups/:id/keys', (req, reply) => back(reply, classPath(req.params.id)));

  scope.post<{ Params: { id: string } }>('/dashboard/groups/:id/teachers', async (req, reply) => {
    const s = sessionOf(req);
    const form = formOf(req.body);
    await getGroup(deps, s.walletId, req.params.id);
    await setManagerGroup(deps.db, s.walletId, form.identity ?? '', req.params.id, form.give === '1', ownerActor(req), deps.clock.now());
    return back(reply, classPath(req.params.id));
  });

  scope.get<{ Params: { id: string } }>('/dashboard/groups/:id/usage.csv', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const g = await getGroup(deps, s.walletId, req.params.id, groupScopeOf(req));
    const raw = (req.query as Record<string, unknown>).month;
    const month = typeof raw === 'string' && raw !== '' ? raw : koreanDate(deps.clock.now()).slice(0, 7);
    // The class's keys, closed ones too: a month's use stays the class's after a key is closed.
    const [names, rows] = await Promise.all([
      keyNamesById(deps.db, s.walletId),
      rollupRows(deps.db, s.walletId, { ...monthDays(month), groupId: g.id }),
    ]);
    const label = (id: string | null) => (id ? (names.get(id)?.name ?? names.get(id)?.prefix ?? id) : '');
    const csv = usageSummaryCsv(rows, label, ui.currency);
    return sendCsv(reply, `class-${g.id}-${month}.csv`, csv);
  });
}
