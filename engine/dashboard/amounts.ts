// Amounts as an owner reads and types them. The gateway counts in credits (1 credit = $0.000001 = 1,000
// nano-USD); people think in dollars. So every amount shown gets its dollars beside it, and a form takes
// either, in both languages: "500000", "1,000,000", "1,000,000 credits" or "1,000,000 크레딧" are credits;
// "$5", "5 USD", "US$0.50", "5달러" are dollars. The pages print amounts grouped the same way in both
// locales (format.ts), so what a page shows can be typed back as it is.
import { errors } from '../core/errors.ts';
import * as format from './format.ts';
import { html, type Html } from './html.ts';
import { t, type Ui } from './i18n.ts';
import type { Locale } from './locale.ts';

const CREDITS_PER_DOLLAR = 1_000_000;

/** Dollars of a nano-USD amount, as the locale writes them (English by default, as the tests read it). */
export const usdOfNano = (nano: bigint, locale: Locale = 'en'): string => format.usdOfNano(locale, nano);
export const usdOfCredits = (credits: number, locale: Locale = 'en'): string => format.usdOfCredits(locale, credits);

const GROUPED = /^\d{1,3}(?:,\d{3})+$|^\d+$/;
const DOLLARS = [/^(?:US)?\$\s*([\d,]+(?:\.\d*)?)$/i, /^([\d,]+(?:\.\d*)?)\s*(?:\$|USD|dollars?|달러)$/i];
const CREDITS = /^([\d,]+)\s*(?:credits?|크레딧)?$/i;

/**
 * Credits of what the owner typed in an amount field (not blank); 400 naming the field in words (the
 * locale's) when it is neither a whole number of credits nor dollars to the credit.
 */
export function creditsFromText(text: string, field: string, label: string, locale: Locale = 'en'): number {
  const s = text.trim().replace(/\s+/g, ' ');
  const refuse = (why: Parameters<typeof t>[1]) =>
    errors.invalidRequest(t(locale, 'amount.error', { label, why: t(locale, why, { text }) }), field);
  const dollars = DOLLARS.map((re) => re.exec(s)).find((m) => m !== null);
  if (dollars) {
    const [whole, frac = ''] = dollars[1].split('.');
    if (!GROUPED.test(whole)) throw refuse('amount.not_dollars');
    if (frac.length > 6) throw refuse('amount.decimals');
    const credits = Number(whole.replace(/,/g, '')) * CREDITS_PER_DOLLAR + Number(frac.padEnd(6, '0'));
    if (!Number.isSafeInteger(credits)) throw refuse('amount.too_large');
    return credits;
  }
  const plain = CREDITS.exec(s);
  if (plain && GROUPED.test(plain[1])) {
    const credits = Number(plain[1].replace(/,/g, ''));
    if (!Number.isSafeInteger(credits)) throw refuse('amount.too_large');
    return credits;
  }
  throw refuse('amount.not_amount');
}

/** Credits as shown on a page, their dollars beside them. */
export const creditsWithUsd = (ui: Ui, credits: number): Html =>
  html`${ui.int(credits)} <small class="usd">(${ui.usdOfCredits(credits)})</small>`;
