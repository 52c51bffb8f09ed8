// /dashboard/videos: the wallet's API video jobs (those GET /v1/videos still answers) with status, cost
// and when the file expires.
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

export function registerVideosPage(scope: FastifyInstance, deps: DashboardDeps): void {
  scope.get('/dashboard/videos', async (req, reply) => {
    const s = sessionOf(req);
    const now = deps.clock.now();
    const jobs = (await deps.videos.list(s.walletId, { limit: SHOWN, order: 'desc', now })).filter((j) => isVisible(j, now)).slice(0, SHOWN);
    return sendPage(reply, 200, {
      title: 'Videos',
      signedIn: { section: 'videos', csrfToken: s.csrfToken, walletId: s.walletId },
      body: jobs.length === 0
        ? html`<p>No video jobs made through the API.</p>`
        : html`<div class="scroll"><table><caption>Video jobs, newest first</caption>
<thead><tr><th scope="col">Job</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col">Length and size</th><th scope="col" class="num">Cost (credits)</th><th scope="col">Created</th><th scope="col">File expires</th></tr></thead>
<tbody>${jobs.map(
            (j) => html`<tr data-video-id="${j.id}"><td><code>${j.id}</code></td><td>${j.model}</td>
<td>${j.status}${j.status === 'in_progress' ? ` (${j.progress}%)` : ''}${j.errorCode ? html`: <code>${j.errorCode}</code>` : ''}</td>
<td>${j.seconds} s · ${j.size}</td><td class="num">${cost(j)}</td><td>${koreanTime(iso(j.createdAt))}</td><td>${koreanTime(iso(j.expiresAt))}</td></tr>`,
          )}</tbody></table></div>`,
    });
  });
}
