// /dashboard/videos: the wallet's API video jobs (those GET /v1/videos still answers) with status, cost
// and when the file expires, then the jobs deleted through the API, listed as deleted.
import type { FastifyInstance } from 'fastify';
import { isVisible } from '../videos/view.ts';
import type { VideoJob } from '../videos/store.ts';
import { usdOfNano } from './amounts.ts';
import type { DashboardDeps } from './deps.ts';
import { exactCredits, html, koreanTime } from './html.ts';
import { sendPage } from './layout.ts';
import { sessionOf } from './session-http.ts';

const SHOWN = 200;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function cost(j: VideoJob) {
  const usd = (nano: bigint) => html` <small class="usd">(${usdOfNano(nano)})</small>`;
  if (j.costNano !== null) return html`<span data-nano="${j.costNano.toString()}">${exactCredits(j.costNano)}</span>${usd(j.costNano)}`;
  return j.status === 'completed' || j.status === 'failed' ? html`0.000${usd(0n)}` : html`<span>${exactCredits(j.holdNano)} held</span>${usd(j.holdNano)}`;
}

/**
 * Jobs the owner deleted through DELETE /v1/videos/{id}. The API no longer answers for them, but their charge
 * stays in Usage, so the page lists them as deleted rather than letting a charged job vanish.
 */
async function deletedJobs(deps: DashboardDeps, walletId: string) {
  const res = await deps.db.query<{ id: string; model: string; seconds: string; size: string; cost_nano: string | null; created_at: Date | string; deleted_at: Date | string }>(
    `SELECT id, model, seconds::text, size, cost_nano::text, created_at, deleted_at FROM video_jobs
      WHERE wallet_id = $1 AND deleted_at IS NOT NULL ORDER BY seq DESC LIMIT $2`,
    [walletId, SHOWN],
  );
  return res.rows;
}

export function registerVideosPage(scope: FastifyInstance, deps: DashboardDeps): void {
  scope.get('/dashboard/videos', async (req, reply) => {
    const s = sessionOf(req);
    const now = deps.clock.now();
    const [listed, deleted] = await Promise.all([deps.videos.list(s.walletId, { limit: SHOWN, order: 'desc', now }), deletedJobs(deps, s.walletId)]);
    const jobs = listed.filter((j) => isVisible(j, now)).slice(0, SHOWN);
    const usd = (nano: bigint) => html` <small class="usd">(${usdOfNano(nano)})</small>`;
    const deletedTable = deleted.length === 0
      ? ''
      : html`<h2>Deleted</h2><div class="scroll"><table data-testid="deleted-videos"><caption>Video jobs deleted through the API, newest first; their charges stay in Usage</caption>
<thead><tr><th scope="col">Job</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col">Length and size</th><th scope="col" class="num">Cost (credits)</th><th scope="col">Created</th><th scope="col">Deleted</th></tr></thead>
<tbody>${deleted.map(
          (j) => html`<tr data-video-id="${j.id}"><td><code>${j.id}</code></td><td>${j.model}</td><td>deleted</td><td>${j.seconds} s · ${j.size}</td>
<td class="num">${j.cost_nano === null ? '0.000' : html`<span data-nano="${j.cost_nano}">${exactCredits(BigInt(j.cost_nano))}</span>${usd(BigInt(j.cost_nano))}`}</td>
<td>${koreanTime(new Date(j.created_at).toISOString())}</td><td>${koreanTime(new Date(j.deleted_at).toISOString())}</td></tr>`,
        )}</tbody></table></div>`;
    return sendPage(reply, 200, {
      title: 'Videos',
      signedIn: { section: 'videos', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${jobs.length === 0
        ? html`<p data-testid="empty">No video jobs yet. Videos are made through the API (<code>POST /v1/videos</code>) with a teacher key; each job appears here with its status and cost.</p>`
        : html`<div class="scroll"><table><caption>Video jobs, newest first</caption>
<thead><tr><th scope="col">Job</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col">Length and size</th><th scope="col" class="num">Cost (credits)</th><th scope="col">Created</th><th scope="col">File expires</th></tr></thead>
<tbody>${jobs.map(
            (j) => html`<tr data-video-id="${j.id}"><td><code>${j.id}</code></td><td>${j.model}</td>
<td>${j.status}${j.status === 'in_progress' ? ` (${j.progress}%)` : ''}${j.errorCode ? html`: <code>${j.errorCode}</code>` : ''}</td>
<td>${j.seconds} s · ${j.size}</td><td class="num">${cost(j)}</td><td>${koreanTime(iso(j.createdAt))}</td><td>${koreanTime(iso(j.expiresAt))}</td></tr>`,
          )}</tbody></table></div>`}
${deletedTable}`,
    });
  });
}
