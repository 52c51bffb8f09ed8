// The strip under the header of every signed-in page: what the wallet can still spend, in dollars first (the
// owner's unit) with the credits beside. Read once per request by the guard (routes.ts) so no page can forget it.
import type { FastifyRequest } from 'fastify';
import { requestSlot } from '../http/request-slots.ts';
import type { Ledger } from '../money/ledger.ts';
import { usdOfNano } from './amounts.ts';
import { exactCredits, html, type Html } from './html.ts';

interface WalletSummary {
  availableNano: bigint;
  reservedNano: bigint;
}

const summaries = requestSlot<WalletSummary>('dashboard_wallet_summary');

export async function loadWalletSummary(req: FastifyRequest, ledger: Ledger, walletId: string): Promise<void> {
  const b = await ledger.balance(walletId);
  summaries.set(req, { availableNano: b.availableNano, reservedNano: b.reservedNano });
}

/** Credits are whole on the wallet page; the strip rounds down the same way. */
const wholeCredits = (nano: bigint) => exactCredits(nano - (nano % 1000n)).replace(/\.000$/, '');

export function summaryStrip(req: FastifyRequest | undefined): Html | '' {
  const s = req && summaries.get(req);
  if (!s) return '';
  return html`<p class="summary" data-testid="summary"><span>Balance <strong data-testid="summary-usd">${usdOfNano(s.availableNano)}</strong>
<small>(${wholeCredits(s.availableNano)} credits)</small></span>${
    s.reservedNano > 0n ? html`<span>Held for calls in progress ${usdOfNano(s.reservedNano)}</span>` : ''
  }<a href="/dashboard/wallet">Wallet</a></p>`;
}
