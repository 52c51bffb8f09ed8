// /dashboard/usage: the chart of credits per Korean day (last 30 days, per key or per model) and its totals,
// both from the daily rollup, the recent calls from the usage records, filterable by key and model, the same
// rows as CSV (optionally one Korean month), the month's summary CSV from the rollup, and one call's record
// (404 for an id this wallet never used, like GET /v1/generations/{id}).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { koreanDate, startOfKoreanDay } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { keyNamesById } from '../keys/manage.ts';
import { findUsageRecord, listUsageRecords, type UsageRecordView } from '../usage/records.ts';
import { listUsageCsvRows } from '../usage/csv-rows.ts';
import { chargedPerDay, rollupRows, usageTotals, type UsageTotals } from '../usage/daily-rollup.ts';
import { usdOfNano } from './amounts.ts';
import { callDetail } from './usage-detail.ts';
import type { DashboardDeps } from './deps.ts';
import { queryText } from './form.ts';
import { exactCredits, html, koreanTime, type Html } from './html.ts';
import { sendPage } from './layout.ts';
import { sessionOf } from './session-http.ts';
import { usageCsv, usageSummaryCsv } from './usage-csv.ts';
import { usageChart } from './usage-chart.ts';

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

export const keyLabel = (names: KeyNames, id: string | null): string => {
  if (!id) return '(no key)';
  const k = names.get(id);
  return k ? (k.name ?? k.prefix) : id;
};

function filters(query: unknown) {
  const by = queryText(query, 'by', 10) ?? 'key';
  if (by !== 'key' && by !== 'model') throw errors.invalidRequest(`by must be 'key' or 'model'.`, 'by');
  return { keyId: queryText(query, 'key'), model: queryText(query, 'model'), by: by as 'key' | 'model' };
}

/** A Korean month `YYYY-MM`: its first and last day, and the instants it starts and ends. */
export function koreanMonth(month: string): { fromDay: string; toDay: string; since: Date; until: Date } {
  const m = /^(\d{4})-(0[1-9]|1[0-2])$/.exec(month);
  if (!m) throw errors.invalidRequest(`month must be a month as YYYY-MM, such as 2026-11.`, 'month');
  const year = Number(m[1]);
  const next = m[2] === '12' ? `${year + 1}-01` : `${m[1]}-${String(Number(m[2]) + 1).padStart(2, '0')}`;
  const since = startOfKoreanDay(`${month}-01`);
  const until = startOfKoreanDay(`${next}-01`);
  return { fromDay: `${month}-01`, toDay: koreanDate(new Date(until.getTime() - DAY_MS / 2)), since, until };
}

function totalsLine(t: UsageTotals): Html {
  return html`<p data-testid="usage-totals" data-nano="${t.chargedNano.toString()}" data-calls="${t.calls}">In these days: <strong>${exactCredits(t.chargedNano)} credits</strong> over ${t.calls.toLocaleString('en-US')} calls; ${t.inputTokens.toLocaleString('en-US')} input tokens (${t.cacheReadTokens.toLocaleString('en-US')} read from cache), ${t.outputTokens.toLocaleString('en-US')} output tokens.</p>`;
}

function filterForm(f: ReturnType<typeof filters>, names: KeyNames, models: string[]): Html {
  const opt = (value: string, text: string, current: string | undefined) => html`<option value="${value}"${value === current ? html` selected` : ''}>${text}</option>`;
  const modelList = f.model && !models.includes(f.model) ? [...models, f.model] : models;
  return html`<form method="get" action="/dashboard/usage"><fieldset><legend>Show</legend>
<label for="f-by">Chart per</label><select id="f-by" name="by">${opt('key', 'key', f.by)}${opt('model', 'model', f.by)}</select>
<label for="f-key">Calls of key</label><select id="f-key" name="key"><option value="">every key</option>${[...names].map(([id, k]) => opt(id, `${k.name ?? k.prefix}`, f.keyId))}</select>
<label for="f-model">Calls of model</label><select id="f-model" name="model"><option value="">every model</option>${modelList.map((m) => opt(m, m, f.model))}</select>
<p><button type="submit">Apply</button></p></fieldset></form>`;
}

function callsTable(rows: UsageRecordView[], names: KeyNames, filtered: boolean): Html {
  if (rows.length === 0) return filtered ? html`<p>No calls match. Choose "every key" and "every model" to see all calls.</p>` : html`<p>No calls yet.</p>`;
  return html`<div class="scroll"><table data-testid="usage-table"><caption>Recent calls, newest first (at most ${TABLE_ROWS})</caption>
<thead><tr><th scope="col">When</th><th scope="col">Key</th><th scope="col">Model</th><th scope="col">Door</th><th scope="col" class="num">Input tokens</th><th scope="col" class="num">Output tokens</th><th scope="col" class="num">Charged (credits)</th><th scope="col">Call</th></tr></thead>
<tbody>${rows.map(
    (r) => html`<tr data-generation-id="${r.id}"><td>${koreanTime(r.created_at)}</td><td>${keyLabel(names, r.key_id)}</td><td>${r.model}</td><td>${r.door}</td>
<td class="num">${r.tokens.input.toLocaleString('en-US')}</td><td class="num">${r.tokens.output.toLocaleString('en-US')}</td>
<td class="num"><span data-testid="charge" data-nano="${r.charged_nano}">${exactCredits(BigInt(r.charged_nano))}</span> <small class="usd">(${usdOfNano(BigInt(r.charged_nano))})</small></td>
<td><a href="/dashboard/usage/${encodeURIComponent(r.id)}">details<span class="skip"> of call ${r.id}</span></a></td></tr>`,
  )}</tbody></table></div>`;
}

function sendCsv(reply: FastifyReply, filename: string, body: string) {
  return reply
    .headers({
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${filename}"`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    })
    .send(body);
}

export function registerUsagePage(scope: FastifyInstance, deps: DashboardDeps): void {
  scope.get('/dashboard/usage', async (req, reply) => {
    const s = sessionOf(req);
    const f = filters(req.query);
    const now = deps.clock.now();
    const days = lastKoreanDays(now, CHART_DAYS);
    const [names, perModel, charted, totals, rows] = await Promise.all([
      keyNamesById(deps.db, s.walletId),
      chargedPerDay(deps.db, s.walletId, days[0], 'model'),
      // The chart and its totals show the calls the table shows: the same key and model filter.
      chargedPerDay(deps.db, s.walletId, days[0], f.by === 'key' ? 'key_id' : 'model', { keyId: f.keyId, model: f.model }),
      usageTotals(deps.db, s.walletId, { fromDay: days[0], toDay: days[days.length - 1], keyId: f.keyId, model: f.model }),
      listUsageRecords(deps.db, s.walletId, { keyId: f.keyId, model: f.model, limit: TABLE_ROWS }),
    ]);
    const models = [...new Set(perModel.map((p) => p.name))].sort();
    const chart =
      f.by === 'key' ? usageChart(days, charted, (id) => keyLabel(names, id), 'key') : usageChart(days, charted, (m) => m, 'model');
    const filtered = f.keyId || f.model ? html`<p data-testid="chart-filter">Showing only the calls of ${f.keyId ? html`key <strong>${keyLabel(names, f.keyId)}</strong>` : ''}${
      f.keyId && f.model ? ' and ' : ''
    }${f.model ? html`model <strong>${f.model}</strong>` : ''}, in the chart and the table.</p>` : '';
    const noCallsYet = perModel.length === 0 && rows.length === 0 && !f.keyId && !f.model;
    const csvQuery = new URLSearchParams({ ...(f.keyId ? { key: f.keyId } : {}), ...(f.model ? { model: f.model } : {}) }).toString();
    return sendPage(reply, 200, {
      title: 'Usage',
      signedIn: { section: 'usage', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`<p>Charges are exact: one credit is 1,000 nano-USD ($0.000001), so three decimals show every nano-USD.</p>
${filterForm(f, names, models)}
${filtered}
<h2>Credits per day, last ${CHART_DAYS} Korean days</h2>
${
  noCallsYet
    ? html`<p data-testid="empty">No calls yet. Calls made with this wallet's API keys appear here within seconds, with what each one cost. <a href="/dashboard/keys">Create a key</a> and point an OpenAI or Anthropic client at this gateway with it.</p>`
    : html`${chart}
${totalsLine(totals)}`
}
<h2>Recent calls</h2>
<p><a href="/dashboard/usage.csv${csvQuery ? `?${csvQuery}` : ''}" download>Download these calls as CSV</a> (up to ${CSV_ROWS.toLocaleString('en-US')} rows; add <code>month=YYYY-MM</code> for one Korean month),
or <a href="/dashboard/usage-summary.csv?month=${koreanDate(now).slice(0, 7)}${csvQuery ? `&${csvQuery}` : ''}" download>this month's summary per day, key and model</a>.</p>
${callsTable(rows, names, !!(f.keyId || f.model))}`,
    });
  });

  scope.get('/dashboard/usage.csv', async (req, reply) => {
    const s = sessionOf(req);
    const f = filters(req.query);
    const month = queryText(req.query, 'month', 7);
    const span = month ? koreanMonth(month) : null;
    const [names, rows] = await Promise.all([
      keyNamesById(deps.db, s.walletId),
      listUsageCsvRows(deps.db, s.walletId, { keyId: f.keyId, model: f.model, limit: CSV_ROWS, since: span?.since, until: span?.until }),
    ]);
    return sendCsv(reply, `usage-${month ?? koreanDate(deps.clock.now())}.csv`, usageCsv(rows, (id) => keyLabel(names, id)));
  });

  scope.get('/dashboard/usage-summary.csv', async (req, reply) => {
    const s = sessionOf(req);
    const f = filters(req.query);
    const month = queryText(req.query, 'month', 7) ?? koreanDate(deps.clock.now()).slice(0, 7);
    const { fromDay, toDay } = koreanMonth(month);
    const [names, rows] = await Promise.all([
      keyNamesById(deps.db, s.walletId),
      rollupRows(deps.db, s.walletId, { fromDay, toDay, keyId: f.keyId, model: f.model }),
    ]);
    return sendCsv(reply, `usage-summary-${month}.csv`, usageSummaryCsv(rows, (id) => keyLabel(names, id)));
  });

  scope.get<{ Params: { id: string } }>('/dashboard/usage/:id', async (req, reply) => {
    const s = sessionOf(req);
    const r = await findUsageRecord(deps.db, s.walletId, req.params.id);
    if (!r) throw errors.notFound(`No call with id '${req.params.id}' was made from this wallet.`);
    const names = await keyNamesById(deps.db, s.walletId);
    return sendPage(reply, 200, {
      title: 'Call',
      signedIn: { section: 'usage', csrfToken: s.csrfToken, walletId: s.walletId },
      body: callDetail(r, (id) => keyLabel(names, id)),
    });
  });
}
