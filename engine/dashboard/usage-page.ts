// /dashboard/usage: the daily chart and totals from the rollup, the recent calls from the usage records, their CSVs,
// and one call's record (404 for an id this wallet never used).
import type { FastifyInstance } from 'fastify';
import { koreanDate, startOfKoreanDay } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { type GroupChoice, groupChoices } from '../keys/groups.ts';
import { keyNamesById } from '../keys/manage.ts';
import { listUsageCsvRows } from '../usage/csv-rows.ts';
import { chargedPerDay, rollupRows, type UsageTotals, usageTotals } from '../usage/daily-rollup.ts';
import { findUsageRecord, listUsageRecords, type UsageRecordView } from '../usage/records.ts';
import type { DashboardDeps } from './deps.ts';
import { queryText } from './form.ts';
import { type Html, html } from './html.ts';
import { type Ui, uiFor } from './i18n.ts';
import { sendPage } from './layout.ts';
import { sessionOf } from './session-http.ts';
import { usageChart } from './usage-chart.ts';
import { sendCsv, usageCsv, usageSummaryCsv } from './usage-csv.ts';
import { callDetail } from './usage-detail.ts';

const CHART_DAYS = 30;
const TABLE_ROWS = 200;
const CSV_ROWS = 10_000;
const DAY_MS = 86_400_000;

/** The last `n` Korean dates ending today, oldest first. */
function lastKoreanDays(now: Date, n: number): string[] {
  const today = startOfKoreanDay(koreanDate(now));
  return Array.from({ length: n }, (_, i) => koreanDate(new Date(today.getTime() - (n - 1 - i) * DAY_MS + 12 * 3_600_000)));
}

type KeyNames = Awaited<ReturnType<typeof keyNamesById>>;

const keyLabel = (ui: Ui, names: KeyNames, id: string | null): string => {
  if (!id) return ui.t('usage.no_key');
  const k = names.get(id);
  return k ? (k.name ?? k.prefix) : id;
};

type Classes = readonly GroupChoice[];

/** The page's filters; a class that is not one of the wallet's shows every class, as no filter. */
function filters(ui: Ui, query: unknown, classes: Classes) {
  const by = queryText(query, 'by', 10) ?? 'key';
  if (by !== 'key' && by !== 'model') throw errors.invalidRequest(ui.t('usage.by_invalid'), 'by');
  const asked = queryText(query, 'class', 64);
  const groupId = classes.some((c) => c.id === asked) ? asked : undefined;
  return { keyId: queryText(query, 'key'), groupId, model: queryText(query, 'model'), by: by as 'key' | 'model' };
}

/** What the filters show, in words ("key lab 1 and class 1-2"), or undefined for every call. */
function filterWords(ui: Ui, f: ReturnType<typeof filters>, names: KeyNames, classes: Classes): Html | undefined {
  const strong = (text: string) => html`<strong>${text}</strong>`;
  const which = [
    ...(f.keyId ? [ui.th('usage.filter_key', { name: strong(keyLabel(ui, names, f.keyId)) })] : []),
    ...(f.groupId ? [ui.th('usage.filter_class', { name: strong(classes.find((c) => c.id === f.groupId)?.name ?? f.groupId) })] : []),
    ...(f.model ? [ui.th('usage.filter_model', { name: strong(f.model) })] : []),
  ];
  return which.reduce<Html | undefined>((a, b) => (a ? ui.th('usage.filter_and', { a, b }) : b), undefined);
}

/** The filters as a query string, for the CSV links. */
const filterQuery = (f: ReturnType<typeof filters>) =>
  new URLSearchParams({
    ...(f.keyId ? { key: f.keyId } : {}),
    ...(f.groupId ? { class: f.groupId } : {}),
    ...(f.model ? { model: f.model } : {}),
  }).toString();

/** A Korean month `YYYY-MM`: its first and last day, and the instants it starts and ends. */
function koreanMonth(ui: Ui, month: string): { fromDay: string; toDay: string; since: Date; until: Date } {
  const m = /^(\d{4})-(0[1-9]|1[0-2])$/.exec(month);
  if (!m) throw errors.invalidRequest(ui.t('usage.month_invalid'), 'month');
  const year = Number(m[1]);
  const next = m[2] === '12' ? `${year + 1}-01` : `${m[1]}-${String(Number(m[2]) + 1).padStart(2, '0')}`;
  const since = startOfKoreanDay(`${month}-01`);
  const until = startOfKoreanDay(`${next}-01`);
  return { fromDay: `${month}-01`, toDay: koreanDate(new Date(until.getTime() - DAY_MS / 2)), since, until };
}

function totalsLine(ui: Ui, t: UsageTotals): Html {
  const figures = {
    money: ui.money(t.chargedNano, 'up'),
    credits: ui.exact(t.chargedNano),
    calls: ui.int(t.calls),
    input: ui.int(t.inputTokens),
    cached: ui.int(t.cacheReadTokens),
    output: ui.int(t.outputTokens),
  };
  return html`<p data-testid="usage-totals" data-nano="${t.chargedNano.toString()}" data-calls="${t.calls}">${ui.th('usage.totals', figures)}</p>`;
}

function filterForm(ui: Ui, f: ReturnType<typeof filters>, names: KeyNames, models: string[], classes: Classes): Html {
  const { t } = ui;
  const opt = (value: string, text: string, current: string | undefined) =>
    html`<option value="${value}"${value === current ? html` selected` : ''}>${text}</option>`;
  const modelList = f.model && !models.includes(f.model) ? [...models, f.model] : models;
  return html`<form method="get" action="/dashboard/usage"><fieldset><legend>${t('usage.show')}</legend>
<label for="f-by">${t('usage.chart_per')}</label><select id="f-by" name="by">${opt('key', t('usage.per_key'), f.by)}${opt('model', t('usage.per_model'), f.by)}</select>
<label for="f-key">${t('usage.calls_of_key')}</label><select id="f-key" name="key"><option value="">${t('usage.every_key')}</option>${[...names].map(([id, k]) => opt(id, `${k.name ?? k.prefix}`, f.keyId))}</select>
${
  classes.length > 0
    ? html`<label for="f-class">${t('usage.calls_of_class')}</label><select id="f-class" name="class"><option value="">${t('usage.every_class')}</option>${classes.map((c) => opt(c.id, c.name, f.groupId))}</select>`
    : ''
}
<label for="f-model">${t('usage.calls_of_model')}</label><select id="f-model" name="model"><option value="">${t('usage.every_model')}</option>${modelList.map((m) => opt(m, m, f.model))}</select>
<p><button type="submit">${t('usage.apply')}</button></p></fieldset></form>`;
}

function callsTable(ui: Ui, rows: UsageRecordView[], names: KeyNames, filtered: boolean): Html {
  const { t } = ui;
  if (rows.length === 0) return filtered ? html`<p>${t('usage.no_match')}</p>` : html`<p>${t('usage.no_calls')}</p>`;
  return html`<div class="scroll"><table data-testid="usage-table"><caption>${t('usage.caption', { n: ui.int(TABLE_ROWS) })}</caption>
<thead><tr><th scope="col">${t('col.when')}</th><th scope="col">${t('col.key')}</th><th scope="col">${t('col.model')}</th><th scope="col">${t('usage.col.door')}</th><th scope="col" class="num">${t('usage.col.input')}</th><th scope="col" class="num">${t('usage.col.output')}</th><th scope="col" class="num">${t('usage.col.charged')}</th><th scope="col">${t('usage.col.call')}</th></tr></thead>
<tbody>${rows.map(
    (
      r,
    ) => html`<tr data-generation-id="${r.id}"><td>${ui.time(r.created_at)}</td><td>${keyLabel(ui, names, r.key_id)}</td><td>${r.model}</td><td>${ui.word('door', r.door)}</td>
<td class="num">${ui.int(r.tokens.input)}</td><td class="num">${ui.int(r.tokens.output)}</td>
<td class="num"><span data-testid="charge" data-nano="${r.charged_nano}">${ui.exact(BigInt(r.charged_nano))}</span> <small class="usd">(${ui.money(BigInt(r.charged_nano), 'up')})</small></td>
<td><a href="/dashboard/usage/${encodeURIComponent(r.id)}">${t('usage.details')}<span class="skip"> ${t('usage.details_of', { id: r.id })}</span></a></td></tr>`,
  )}</tbody></table></div>`;
}

export function registerUsagePage(scope: FastifyInstance, deps: DashboardDeps): void {
  scope.get('/dashboard/usage', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const classes = await groupChoices(deps.db, s.walletId);
    const f = filters(ui, req.query, classes);
    const now = deps.clock.now();
    const days = lastKoreanDays(now, CHART_DAYS);
    const [fromDay, toDay] = [days[0]!, days.at(-1)!]; // CHART_DAYS days, oldest first
    const [names, perModel, charted, totals, rows] = await Promise.all([
      keyNamesById(deps.db, s.walletId),
      chargedPerDay(deps.db, s.walletId, fromDay, 'model'),
      // The chart and its totals show the calls the table shows: the same key, class and model filter.
      chargedPerDay(deps.db, s.walletId, fromDay, f.by === 'key' ? 'key_id' : 'model', f),
      usageTotals(deps.db, s.walletId, { fromDay, toDay, ...f }),
      listUsageRecords(deps.db, s.walletId, { ...f, limit: TABLE_ROWS }),
    ]);
    const models = [...new Set(perModel.map((p) => p.name))].sort();
    const chart =
      f.by === 'key'
        ? usageChart(days, charted, (id) => keyLabel(ui, names, id), 'key', ui)
        : usageChart(days, charted, (m) => m, 'model', ui);
    const what = filterWords(ui, f, names, classes);
    const filtered = what ? html`<p data-testid="chart-filter">${ui.th('usage.filtered', { what })}</p>` : '';
    const anyFilter = !!(f.keyId || f.groupId || f.model);
    const noCallsYet = perModel.length === 0 && rows.length === 0 && !anyFilter;
    const csvQuery = filterQuery(f);
    return sendPage(reply, 200, {
      title: t('nav.usage'),
      signedIn: { section: 'usage', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`<p>${t('usage.intro')}</p>
${filterForm(ui, f, names, models, classes)}
${filtered}
<h2>${t('usage.chart_heading', { n: CHART_DAYS })}</h2>
${
  noCallsYet
    ? html`<p data-testid="empty">${ui.th('usage.empty')}</p>`
    : html`${chart}
${totalsLine(ui, totals)}`
}
<h2>${t('usage.recent')}</h2>
<p><a href="/dashboard/usage.csv${csvQuery ? `?${csvQuery}` : ''}" download>${t('usage.csv')}</a> ${ui.th('usage.csv_rows_month', { n: ui.int(CSV_ROWS) })}
<a href="/dashboard/usage-summary.csv?month=${koreanDate(now).slice(0, 7)}${csvQuery ? `&${csvQuery}` : ''}" download>${t('usage.summary_csv')}</a>.</p>
${callsTable(ui, rows, names, anyFilter)}`,
    });
  });

  scope.get('/dashboard/usage.csv', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const f = filters(ui, req.query, await groupChoices(deps.db, s.walletId));
    const month = queryText(req.query, 'month', 7);
    const span = month ? koreanMonth(ui, month) : null;
    const [names, rows] = await Promise.all([
      keyNamesById(deps.db, s.walletId),
      listUsageCsvRows(deps.db, s.walletId, { ...f, limit: CSV_ROWS, since: span?.since, until: span?.until }),
    ]);
    return sendCsv(
      reply,
      `usage-${month ?? koreanDate(deps.clock.now())}.csv`,
      usageCsv(rows, (id) => keyLabel(ui, names, id)),
    );
  });

  scope.get('/dashboard/usage-summary.csv', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const f = filters(ui, req.query, await groupChoices(deps.db, s.walletId));
    const month = queryText(req.query, 'month', 7) ?? koreanDate(deps.clock.now()).slice(0, 7);
    const { fromDay, toDay } = koreanMonth(ui, month);
    const [names, rows] = await Promise.all([keyNamesById(deps.db, s.walletId), rollupRows(deps.db, s.walletId, { fromDay, toDay, ...f })]);
    return sendCsv(
      reply,
      `usage-summary-${month}.csv`,
      usageSummaryCsv(rows, (id) => keyLabel(ui, names, id), ui.currency),
    );
  });

  scope.get<{ Params: { id: string } }>('/dashboard/usage/:id', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const r = await findUsageRecord(deps.db, s.walletId, req.params.id);
    if (!r) throw errors.notFound(t('usage.not_found', { id: req.params.id }));
    const names = await keyNamesById(deps.db, s.walletId);
    return sendPage(reply, 200, {
      title: t('usage.call_title'),
      signedIn: { section: 'usage', csrfToken: s.csrfToken, walletId: s.walletId },
      body: callDetail(ui, r, (id) => keyLabel(ui, names, id)),
    });
  });
}
