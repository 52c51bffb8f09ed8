// Amounts as an owner reads and types them: people think in dollars or won, not credits, so every amount shown has
// its money beside it and a form takes any of them (read by core/money.ts's creditsOfAmount). Pages group digits
// the same way in both locales, so what a page shows can be typed back as it is.
import { errors } from '../core/errors.ts';
import { creditsOfAmount, creditsToNano, type DisplayCurrency, displayUnitsText, type Rounding } from '../core/money.ts';
import * as format from './format.ts';
import { type Html, html } from './html.ts';
import { t, type Ui } from './i18n.ts';
import type { Locale } from './locale.ts';

/** Dollars of a nano-USD amount, as the locale writes them (English by default, as the tests read it). */
export const usdOfNano = (nano: bigint, rounding: Rounding, locale: Locale = 'en'): string => format.usdOfNano(locale, nano, rounding);
export const usdOfCredits = (credits: number, rounding: Rounding, locale: Locale = 'en'): string =>
  format.usdOfCredits(locale, credits, rounding);

/**
 * Credits of what the owner typed in an amount field (not blank); 400 naming the field in words (the
 * locale's) when it is neither a whole number of credits, nor dollars to the credit, nor whole units of the
 * display currency.
 */
export function creditsFromText(
  text: string,
  field: string,
  label: string,
  locale: Locale = 'en',
  currency: DisplayCurrency | null = null,
): number {
  const read = creditsOfAmount(text, currency);
  if ('credits' in read) return Number(read.credits);
  const key = read.refused === 'not_amount' && currency ? 'amount.not_amount_won' : (`amount.${read.refused}` as const);
  const why = t(locale, key, { text, code: currency?.code ?? '' });
  throw errors.invalidRequest(t(locale, 'amount.error', { label, why }), field);
}

/**
 * A saved limit as its change form shows it: in the display currency when that reads back to the same credits
 * (a limit the owner typed in won shows the won typed), else in credits, so saving the form unchanged keeps it.
 */
export function limitValue(ui: Ui, credits: number | null | undefined): string {
  if (credits == null) return '';
  if (ui.currency) {
    const inUnits = displayUnitsText(creditsToNano(credits), ui.currency, 'down');
    const back = creditsOfAmount(inUnits, ui.currency);
    if ('credits' in back && back.credits === BigInt(credits)) return inUnits;
  }
  return ui.credits(credits);
}

/**
 * Money as a table cell shows it: the money first, what it is in credits under it (style.ts), so a table fits a
 * laptop; `creditsId` names the credits for a program reading the page.
 */
export const moneyOver = (money: Html | string, credits: Html | string, creditsId?: string): Html =>
  html`<span class="used">${money}</span> <small class="credits"${creditsId ? html` data-testid="${creditsId}"` : ''}>${credits}</small>`;

/** A number of credits as a table cell shows it (moneyOver), rounded as the caller says. */
export const moneyOverCredits = (ui: Ui, credits: number, rounding: Rounding): Html =>
  moneyOver(ui.moneyOfCredits(credits, rounding), ui.int(credits));
