// GET /dashboard/wallet: credits, reserved credits and the lots with their vendor restrictions; the same
// figures as GET /admin/v1/wallets/{id} (walletView), shown to the owner.
import type { FastifyInstance } from 'fastify';
import { countActiveKeysIn, walletView } from '../admin/routes.ts';
import { koreanDate } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { displayUnitsText } from '../core/money.ts';
import { moneyOverCredits } from './amounts.ts';
import type { DashboardDeps } from './deps.ts';
import { groupScopeOf } from './group-scope.ts';
import { html } from './html.ts';
import { type Ui, uiFor } from './i18n.ts';
import { sendPage } from './layout.ts';
import { intlTag } from './locale.ts';
import { sessionOf } from './session-http.ts';

const NANO_PER_USD = 1_000_000_000n;

const vendorsText = (ui: Ui, vendors: string[] | null) =>
  vendors === null || vendors.length === 0
    ? ui.t('wallet.any_model')
    : ui.t('wallet.vendor_only', { vendors: vendors.map((v) => v.toUpperCase()).join(', ') });

/** When a lot expires (never: a word), and what already left it at its expiry. */
const expiryCell = (ui: Ui, l: { expires_at: string | null; expired_credits: number }) =>
  l.expires_at === null
    ? ui.t('wallet.no_expiry')
    : html`${ui.time(l.expires_at)}${l.expired_credits > 0 ? html`<br><small class="usd">${ui.th('wallet.expired', { money: ui.moneyOfCredits(l.expired_credits, 'down') })}</small>` : ''}`;

export function registerWalletPage(scope: FastifyInstance, deps: DashboardDeps): void {
  // A teacher (a manager limited to classes) starts at the classes: the wallet is not theirs to see.
  scope.get('/dashboard', async (req, reply) =>
    reply
      .code(303)
      .header('location', groupScopeOf(req) ? '/dashboard/groups' : '/dashboard/wallet')
      .send(),
  );

  scope.get('/dashboard/wallet', async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const w = await deps.ledger.getWallet(s.walletId);
    if (!w) throw errors.notFound(t('wallet.gone'));
    const today = koreanDate(deps.clock.now());
    const view = await walletView(deps.db, w, (id) => countActiveKeysIn(deps.db, id, today), {
      today,
      currency: ui.currency,
      now: deps.clock.now(),
    });
    return sendPage(reply, 200, {
      title: t('nav.wallet'),
      signedIn: { section: 'wallet', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`
<dl>
  <dt>${t('wallet.spendable')}</dt><dd><strong data-testid="money">${ui.moneyOfCredits(view.credits, 'down')}</strong> <small>${ui.th('summary.credits', { credits: html`<span data-testid="credits">${ui.credits(view.credits)}</span>` })}</small></dd>
  <dt>${t('wallet.reserved')}</dt><dd>${ui.moneyOfCredits(view.reserved_credits, 'up')} <small>${ui.th('summary.credits', { credits: html`<span data-testid="reserved-credits">${ui.credits(view.reserved_credits)}</span>` })}</small></dd>
  <dt>${t('nav.keys')}</dt><dd>${t('wallet.keys_value', { active: ui.int(view.keys_active), slots: ui.int(view.key_slots) })}</dd>
</dl>
<p>${t('wallet.credit_note')}${ui.currency ? html` ${t('wallet.rate_note', { rate: displayUnitsText(NANO_PER_USD, ui.currency, 'up', intlTag(ui.locale)) })}` : ''}</p>
${view.credits === 0 ? html`<p class="notice" role="note" data-testid="empty">${ui.th('wallet.empty', { command: html`<code>npx gateway wallet topup ${s.walletId} --credits 5000000</code>` })}</p>` : ''}
<h2>${t('wallet.lots')}</h2>
${
  view.lots.length === 0
    ? html`<p data-testid="no-lots">${t('wallet.no_lots')}</p>`
    : html`<div class="scroll"><table>
<caption>${t('wallet.lots_caption')}</caption>
<thead><tr><th scope="col">${t('wallet.col.lot')}</th><th scope="col">${t('wallet.col.usable_for')}</th><th scope="col" class="num">${t('wallet.col.left')}</th><th scope="col" class="num">${t('wallet.col.reserved')}</th><th scope="col" class="num">${t('wallet.col.granted')}</th><th scope="col">${t('wallet.col.added')}</th><th scope="col">${t('wallet.col.expires')}</th></tr></thead>
<tbody>${view.lots.map(
        (l) =>
          html`<tr><td>${l.label ? html`${l.label}<br>` : ''}<small><code>${l.id}</code></small></td><td>${vendorsText(ui, l.vendors)}</td><td class="num">${moneyOverCredits(ui, l.credits, 'down')}</td><td class="num">${moneyOverCredits(ui, l.reserved_credits, 'up')}</td><td class="num">${moneyOverCredits(ui, l.granted_credits, 'down')}</td><td>${ui.time(l.created_at)}</td><td>${expiryCell(ui, l)}</td></tr>`,
      )}</tbody>
</table></div>`
}`,
    });
  });
}
