// GET /dashboard/wallet: credits, reserved credits and the lots with their vendor restrictions; the same
// figures as GET /admin/v1/wallets/{id} (walletView), shown to the owner.
import type { FastifyInstance } from 'fastify';
import { koreanDate } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { countActiveKeysIn, walletView } from '../admin/routes.ts';
import { creditsWithUsd, usdOfCredits } from './amounts.ts';
import type { DashboardDeps } from './deps.ts';
import { credits, html, koreanTime } from './html.ts';
import { sendPage } from './layout.ts';
import { sessionOf } from './session-http.ts';

const vendorsText = (vendors: string[] | null) =>
  vendors === null || vendors.length === 0 ? 'any model' : `vendor ${vendors.map((v) => v.toUpperCase()).join(', ')} only`;

export function registerWalletPage(scope: FastifyInstance, deps: DashboardDeps): void {
  scope.get('/dashboard', async (_req, reply) => reply.code(303).header('location', '/dashboard/wallet').send());

  scope.get('/dashboard/wallet', async (req, reply) => {
    const s = sessionOf(req);
    const w = await deps.ledger.getWallet(s.walletId);
    if (!w) throw errors.notFound('This wallet no longer exists.');
    const view = await walletView(deps.ledger, w, (id) => countActiveKeysIn(deps.db, id, koreanDate(deps.clock.now())));
    return sendPage(reply, 200, {
      title: 'Wallet',
      signedIn: { section: 'wallet', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`
<dl>
  <dt>Credits you can spend</dt><dd><span data-testid="credits">${credits(view.credits)}</span> <small class="usd">(${usdOfCredits(view.credits)})</small></dd>
  <dt>Reserved by calls in progress</dt><dd><span data-testid="reserved-credits">${credits(view.reserved_credits)}</span> <small class="usd">(${usdOfCredits(view.reserved_credits)})</small></dd>
  <dt>API keys</dt><dd>${view.keys_active} active of ${view.key_slots} slots</dd>
</dl>
<p>One credit is $0.000001: 1,000,000 credits are $1. Credits restricted to a vendor pay only for that vendor's models.</p>
${view.credits === 0 ? html`<p class="notice" role="note" data-testid="empty">This wallet has no credits to spend, so calls are refused (402). Credits are added by your gateway's operator: ask them for a top-up (they run <code>npx gateway wallet topup ${s.walletId} --credits 5000000</code> for $5, or use the admin API).</p>` : ''}
<h2>Credit lots</h2>
${
  view.lots.length === 0
    ? html`<p data-testid="no-lots">No credits yet. Ask your gateway's operator to add some to this wallet; they appear here as a lot.</p>`
    : html`<div class="scroll"><table>
<caption>Credit lots, oldest first</caption>
<thead><tr><th scope="col">Lot</th><th scope="col">Usable for</th><th scope="col" class="num">Credits left</th><th scope="col" class="num">Reserved</th><th scope="col" class="num">Granted</th><th scope="col">Added</th></tr></thead>
<tbody>${view.lots.map(
        (l) => html`<tr><td><code>${l.id}</code></td><td>${vendorsText(l.vendors)}</td><td class="num">${creditsWithUsd(l.credits)}</td><td class="num">${creditsWithUsd(l.reserved_credits)}</td><td class="num">${creditsWithUsd(l.granted_credits)}</td><td>${koreanTime(l.created_at)}</td></tr>`,
      )}</tbody>
</table></div>`
}`,
    });
  });
}
