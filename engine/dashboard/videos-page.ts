// /dashboard/videos: the wallet's API video jobs (those GET /v1/videos still answers) with status, cost
// and when the file expires, then the jobs deleted through the API, listed as deleted.
import type { FastifyInstance } from 'fastify';
import type { VideoJob } from '../videos/store.ts';
import { isVisible } from '../videos/view.ts';
import { moneyOver } from './amounts.ts';
import type { DashboardDeps } from './deps.ts';
import { type Html, html } from './html.ts';
import { type Ui, uiFor } from './i18n.ts';
import { sendPage } from './layout.ts';
import { sessionOf } from './session-http.ts';

const SHOWN = 200;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

// A job's money is what it cost or holds: it rounds up, the exact credits under it (amounts.ts moneyOver).
const costCell = (ui: Ui, nano: bigint, credits: Html) => moneyOver(ui.money(nano, 'up'), credits);

// The job's model, its id under it: the id is what the API and support name it by, the model what an owner reads.
const jobCell = (j: { model: string; id: string }) => html`${j.model}<br><small><code>${j.id}</code></small>`;

function cost(ui: Ui, j: VideoJob) {
  if (j.costNano !== null) return costCell(ui, j.costNano, html`<span data-nano="${j.costNano.toString()}">${ui.exact(j.costNano)}</span>`);
  return j.status === 'completed' || j.status === 'failed'
    ? costCell(ui, 0n, html`${ui.exact(0n)}`)
    : costCell(ui, j.holdNano, html`${ui.t('videos.held', { credits: ui.exact(j.holdNano) })}`);
}

/** A job's status in the locale's words (the API's word when it is one this page does not know). */
const statusText = (ui: Ui, status: string) =>
  status === 'queued' || status === 'in_progress' || status === 'completed' || status === 'failed' || status === 'deleted'
    ? ui.t(`videos.status.${status}`)
    : status;

/**
 * Jobs the owner deleted through DELETE /v1/videos/{id}. The API no longer answers for them, but their charge
 * stays in Usage, so the page lists them as deleted rather than letting a charged job vanish.
 */
async function deletedJobs(deps: DashboardDeps, walletId: string) {
  const res = await deps.db.query<{
    id: string;
    model: string;
    seconds: string;
    size: string;
    cost_nano: string | null;
    created_at: Date | string;
    deleted_at: Date | string;
  }>(
    `SELECT id, model, seconds::text, size, cost_nano::text, created_at, deleted_at FROM video_jobs
      WHERE wallet_id = $1 AND deleted_at IS NOT NULL ORDER BY seq DESC LIMIT $2`,
    [walletId, SHOWN],
  );
  return res.rows;
}

// The job's id, long and rarely read, comes last: a phone shows the model, status and length without scrolling.
export function registerVideosPage(scope: FastifyInstance, deps: DashboardDeps): void {
  scope.get('/dashboard/videos', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const now = deps.clock.now();
    const [listed, deleted] = await Promise.all([
      deps.videos.list(s.walletId, { limit: SHOWN, order: 'desc', now }),
      deletedJobs(deps, s.walletId),
    ]);
    const jobs = listed.filter((j) => isVisible(j, now)).slice(0, SHOWN);
    const head = (last: 'videos.col.deleted' | 'videos.col.expires') =>
      html`<thead><tr><th scope="col">${t('col.model')}</th><th scope="col">${t('videos.col.status')}</th><th scope="col">${t('videos.col.length')}</th><th scope="col" class="num">${t('videos.col.cost')}</th><th scope="col">${t('col.created')}</th><th scope="col">${t(last)}</th></tr></thead>`;
    const length = (seconds: string | number, size: string) => t('videos.length', { seconds: ui.num(Number(seconds)), size });
    const deletedTable =
      deleted.length === 0
        ? ''
        : html`<h2>${t('videos.deleted_heading')}</h2><div class="scroll"><table data-testid="deleted-videos"><caption>${t('videos.deleted_caption')}</caption>
${head('videos.col.deleted')}
<tbody>${deleted.map(
            (
              j,
            ) => html`<tr data-video-id="${j.id}"><td>${jobCell(j)}</td><td>${statusText(ui, 'deleted')}</td><td>${length(j.seconds, j.size)}</td>
<td class="num">${j.cost_nano === null ? ui.exact(0n) : costCell(ui, BigInt(j.cost_nano), html`<span data-nano="${j.cost_nano}">${ui.exact(BigInt(j.cost_nano))}</span>`)}</td>
<td>${ui.time(new Date(j.created_at).toISOString())}</td><td>${ui.time(new Date(j.deleted_at).toISOString())}</td></tr>`,
          )}</tbody></table></div>`;
    return sendPage(reply, 200, {
      title: t('nav.videos'),
      signedIn: { section: 'videos', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${
        jobs.length === 0
          ? html`<p data-testid="empty">${ui.th('videos.empty')}</p>`
          : html`<div class="scroll"><table><caption>${t('videos.caption')}</caption>
${head('videos.col.expires')}
<tbody>${jobs.map(
              (j) => html`<tr data-video-id="${j.id}"><td>${jobCell(j)}</td>
<td>${statusText(ui, j.status)}${j.status === 'in_progress' ? ` (${j.progress}%)` : ''}${j.errorCode ? html`<br><small>${ui.locale === 'en' ? html`<code>${j.errorCode}</code>` : ui.word('videos.error', j.errorCode)}</small>` : ''}</td>
<td>${length(j.seconds, j.size)}</td><td class="num">${cost(ui, j)}</td><td>${ui.time(iso(j.createdAt))}</td><td>${ui.time(iso(j.expiresAt))}</td></tr>`,
            )}</tbody></table></div>`
      }
${deletedTable}`,
    });
  });
}
