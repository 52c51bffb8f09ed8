// The strip under the header of every signed-in page: what the wallet can still spend, in dollars first (the
// owner's unit) with the credits beside. Read once per request by the guard (routes.ts) so no page can forget it.
import type { FastifyRequest } from 'fastify';
import type { Db } from '../db/db.ts';
import { requestSlot } from '../http/request-slots.ts';
import type { Ledger } from '../money/ledger.ts';
import { spendableOf } from '../money/spendable.ts';
import { type Html, html } from './html.ts';
import type { Ui } from './i18n.ts';

interface WalletSummary {
  /** What the wallet can spend and what calls hold; null for a teacher, who sees their classes, not the wallet's money. */
  balance: { availableNano: bigint; reservedNano: bigint } | null;
  /** The operator's name for the wallet (a school's name), shown in every page's header; null when unnamed. */
  name: string | null;
}

const summaries = requestSlot<WalletSummary>('dashboard_wallet_summary');

/**
 * The wallet's name for the header, and with `withBalance` the same figures as the wallet page, GET /v1/credits
 * and the admin view (a lease's unused part is not held).
 */
export async function loadWalletSummary(
  req: FastifyRequest,
  db: Db,
  ledger: Ledger,
  walletId: string,
  opts: { now?: Date; withBalance: boolean },
): Promise<void> {
  const [b, w] = await Promise.all([opts.withBalance ? spendableOf(db, walletId, opts.now) : null, ledger.getWallet(walletId)]);
  summaries.set(req, { balance: b && { availableNano: b.availableNano, reservedNano: b.reservedNano }, name: w?.name ?? null });
}

/** The signed-in wallet's name as the guard read it for this request; null when unnamed or not read. */
export const walletNameFor = (req: FastifyRequest | undefined): string | null => (req && summaries.get(req)?.name) ?? null;

export function summaryStrip(req: FastifyRequest | undefined, ui: Ui): Html | '' {
  const s = req && summaries.get(req)?.balance;
  if (!s) return '';
  // Credits are whole on the wallet page; the strip rounds down the same way.
  const whole = ui.int(s.availableNano / 1000n);
  return html`<p class="summary" data-testid="summary"><span>${ui.th('summary.balance', { usd: html`<strong data-testid="summary-usd">${ui.money(s.availableNano, 'down')}</strong>` })}
<small>${ui.t('summary.credits', { credits: whole })}</small></span>${
    s.reservedNano > 0n ? html`<span>${ui.t('summary.held', { usd: ui.money(s.reservedNano, 'up') })}</span>` : ''
  }<a href="/dashboard/wallet">${ui.t('nav.wallet')}</a></p>`;
}
