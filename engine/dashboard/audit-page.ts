// /dashboard/audit: the wallet's audit trail, newest first, filtered by what changed and by Korean dates. Every
// value shown (names, user agents, before and after) is the owner's or a client's text, so all of it goes
// through the html template's escaping like the other pages.
import type { FastifyInstance } from 'fastify';
import { type AuditRecord, listAudit, parseAuditQuery } from '../audit/query.ts';
import { AUDIT_ACTIONS } from '../audit/trail.ts';
import { endOfKoreanDay } from '../core/clock.ts';
import { groupNames } from '../keys/groups.ts';
import { changeText, type GroupNames, groupIdsIn } from './audit-change.ts';
import type { DashboardDeps } from './deps.ts';
import { queryText } from './form.ts';
import { type Html, html } from './html.ts';
import { type MessageKey, type Ui, uiFor } from './i18n.ts';
import { sendPage } from './layout.ts';
import { sessionOf } from './session-http.ts';

const PAGE_SIZE = 100;

const ACTOR_LABEL: Record<string, MessageKey> = {
  owner: 'audit.actor.owner',
  manager: 'audit.actor.manager',
  management_key: 'audit.actor.management_key',
  operator: 'audit.actor.operator',
  system: 'audit.actor.system',
};

/** An action in the locale's words; English keeps the action's own name, as the API and the filter use it. */
const actionText = (ui: Ui, action: string) =>
  (AUDIT_ACTIONS as readonly string[]).includes(action) ? ui.t(`audit.action.${action}` as MessageKey) : action;

const OPERATOR_VIA: Record<string, MessageKey> = {
  cli: 'audit.operator.cli',
  admin_api: 'audit.operator.admin_api',
  first_run: 'audit.operator.first_run',
};

/**
 * Who, in words: the operator by how it came (the command line, its API), the gateway alone (its id names its
 * own job, which the action says already), the others by their kind and id.
 */
function actorText(ui: Ui, actor: AuditRecord['actor']): Html {
  const via = actor.kind === 'operator' && actor.id ? OPERATOR_VIA[actor.id] : undefined;
  if (via) return html`${ui.t('audit.actor.operator_via', { via: ui.t(via) })}`;
  const kind = ACTOR_LABEL[actor.kind];
  const id = actor.kind === 'system' ? null : actor.id;
  return html`${kind ? ui.t(kind) : actor.kind}${id ? html`<br><small><code>${id}</code></small>` : ''}`;
}

/** What the entry is about: a class by its name, its id beside; anything else by its id. */
function targetText(groups: GroupNames, e: AuditRecord): Html | string {
  if (!e.target_id) return '';
  const name = e.action.startsWith('key_group.') ? groups.get(e.target_id) : undefined;
  return html`<br>${name ? html`${name} ` : ''}<small><code>${e.target_id}</code></small>`;
}

function entryRow(ui: Ui, groups: GroupNames, e: AuditRecord): Html {
  const from = e.ip || e.user_agent ? html`${e.ip ?? ''}${e.user_agent ? html`<small class="wrap">${e.user_agent}</small>` : ''}` : html`—`;
  // What changed comes first, with the key, lot or person it is about in its cell: a phone shows it without
  // scrolling, and there is one column fewer to scroll to.
  return html`<tr data-audit-id="${e.id}"><td>${ui.time(e.at)}</td><td>${actionText(ui, e.action)}${targetText(groups, e)}</td><td>${changeText(ui, e, groups)}</td><td>${actorText(ui, e.actor)}</td><td>${from}</td></tr>`;
}

/** The page's filter as the shared query: Korean dates become instants (from 00:00 of `from` up to the end of `to`). */
function filterQuery(query: unknown): {
  action?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  offset?: string | undefined;
} {
  const day = (name: string) => {
    const v = queryText(query, name, 10);
    if (v !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(v)) return { bad: v };
    return { day: v };
  };
  const from = day('from');
  const to = day('to');
  return {
    action: queryText(query, 'action', 40),
    since: from.bad ?? (from.day ? `${from.day}T00:00:00+09:00` : undefined),
    until: to.bad ?? (to.day ? endOfKoreanDay(to.day).toISOString() : undefined),
    offset: queryText(query, 'offset', 15),
  };
}

export function registerAuditPage(scope: FastifyInstance, deps: DashboardDeps): void {
  scope.get('/dashboard/audit', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const q = req.query as Record<string, string | undefined>;
    const filter = parseAuditQuery({ ...filterQuery(req.query), limit: String(PAGE_SIZE) });
    const { data, total, has_more } = await listAudit(deps.db, s.walletId, filter);
    const groups = await groupNames(deps.db, s.walletId, [...new Set(data.flatMap(groupIdsIn))]);
    const keep = new URLSearchParams(
      Object.entries({ action: q.action, from: q.from, to: q.to }).filter((kv): kv is [string, string] => !!kv[1]),
    );
    const pageLink = (offset: number) => `/dashboard/audit?${new URLSearchParams([...keep, ['offset', String(offset)]])}`;
    return sendPage(reply, 200, {
      title: t('nav.audit'),
      signedIn: { section: 'audit', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`<p>${t('audit.intro')}</p>
<form method="get" action="/dashboard/audit"><fieldset><legend>${t('audit.filter')}</legend>
<label for="audit-action">${t('audit.what_changed')}</label><select id="audit-action" name="action"><option value="">${t('audit.everything')}</option>${AUDIT_ACTIONS.map(
        (a) => html`<option value="${a}"${filter.action === a ? html` selected` : ''}>${actionText(ui, a)}</option>`,
      )}</select>
<label for="audit-from">${t('audit.from')}</label><input id="audit-from" name="from" type="date" value="${q.from ?? ''}">
<label for="audit-to">${t('audit.to')}</label><input id="audit-to" name="to" type="date" value="${q.to ?? ''}">
<p><button type="submit">${t('audit.show')}</button></p></fieldset></form>
<div class="scroll"><table><caption>${t(total === 1 ? 'audit.caption_one' : 'audit.caption_many', { n: ui.int(total) })}</caption>
<thead><tr><th scope="col">${t('col.when')}</th><th scope="col">${t('audit.col.what')}</th><th scope="col">${t('audit.col.change')}</th><th scope="col">${t('audit.col.who')}</th><th scope="col">${t('audit.col.from')}</th></tr></thead>
<tbody>${data.map((e) => entryRow(ui, groups, e))}</tbody></table></div>
<nav aria-label="${t('layout.pages')}">${filter.offset > 0 ? html`<a href="${pageLink(Math.max(0, filter.offset - PAGE_SIZE))}">${t('audit.newer')}</a> ` : ''}${
        has_more ? html`<a href="${pageLink(filter.offset + PAGE_SIZE)}">${t('audit.older')}</a>` : ''
      }</nav>`,
    });
  });
}
