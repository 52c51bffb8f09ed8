// Amounts as an owner reads and types them. The gateway counts in credits (1 credit = $0.000001 = 1,000
// nano-USD); people think in dollars. So every amount shown gets its dollars beside it, and a form takes
// either: "500000", "1,000,000" or "1,000,000 credits" are credits; "$5", "5 USD", "US$0.50" are dollars.
import { errors } from '../core/errors.ts';
import { exactCredits, html, type Html } from './html.ts';

const NANO_PER_CREDIT = 1000n;
const CREDITS_PER_DOLLAR = 1_000_000;
const NANO_PER_CENT = 10_000_000n;

/**
 * Dollars of a nano-USD amount: cents from one cent up (rounded half up: the credits beside it stay exact),
 * and below a cent every digit down to the credit, so $0.000123 does not read as $0.00.
 */
export function usdOfNano(nano: bigint): string {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  if (abs === 0n || abs >= NANO_PER_CENT) {
    const cents = (abs + NANO_PER_CENT / 2n) / NANO_PER_CENT;
    return `${sign}$${(cents / 100n).toLocaleString('en-US')}.${(cents % 100n).toString().padStart(2, '0')}`;
  }
  const frac = abs.toString().padStart(9, '0').replace(/0+$/, '');
  return `${sign}$0.${frac}`;
}

export const usdOfCredits = (credits: number): string => usdOfNano(BigInt(credits) * NANO_PER_CREDIT);

const GROUPED = /^\d{1,3}(?:,\d{3})+$|^\d+$/;
const DOLLARS = [/^(?:US)?\$\s*([\d,]+(?:\.\d*)?)$/i, /^([\d,]+(?:\.\d*)?)\s*(?:\$|USD|dollars?)$/i];
const CREDITS = /^([\d,]+)\s*(?:credits?)?$/i;

/**
 * Credits of what the owner typed in an amount field (not blank); 400 naming the field in words when it is
 * neither a whole number of credits nor dollars to the credit.
 */
export function creditsFromText(text: string, field: string, label: string): number {
  const t = text.trim().replace(/\s+/g, ' ');
  const refuse = (why: string) => errors.invalidRequest(`${label}: ${why}`, field);
  const dollars = DOLLARS.map((re) => re.exec(t)).find((m) => m !== null);
  if (dollars) {
    const [whole, frac = ''] = dollars[1].split('.');
    if (!GROUPED.test(whole)) throw refuse(`"${text}" is not an amount of dollars (write $5, $0.50 or 1,000 USD).`);
    if (frac.length > 6) throw refuse(`"${text}" has more than six decimals; one credit ($0.000001) is the smallest amount.`);
    const credits = Number(whole.replace(/,/g, '')) * CREDITS_PER_DOLLAR + Number(frac.padEnd(6, '0'));
    if (!Number.isSafeInteger(credits)) throw refuse(`"${text}" is too large.`);
    return credits;
  }
  const plain = CREDITS.exec(t);
  if (plain && GROUPED.test(plain[1])) {
    const credits = Number(plain[1].replace(/,/g, ''));
    if (!Number.isSafeInteger(credits)) throw refuse(`"${text}" is too large.`);
    return credits;
  }
  throw refuse(`"${text}" is not an amount. Write credits (such as 500,000) or dollars (such as $5 or 5 USD).`);
}

/** Credits as shown on a page, their dollars beside them. */
export const creditsWithUsd = (credits: number): Html => html`${credits.toLocaleString('en-US')} <small class="usd">(${usdOfCredits(credits)})</small>`;

/** Exact credits of a nano-USD amount (three decimals), their dollars beside them. */
export const nanoWithUsd = (nano: bigint): Html => html`${exactCredits(nano)} <small class="usd">(${usdOfNano(nano)})</small>`;
