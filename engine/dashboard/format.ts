// Numbers, money and times as each locale writes them, through Intl: US dollars as the locale writes them (a Korean
// reader's "$" is not assumed to be USD), instants in Korean time with a KST label. Money is never a float here: the
// amounts go to Intl as exact decimal strings.

import { type DisplayCurrency, displayUnitsText, type Rounding } from '../core/money.ts';
import { type Html, html } from './html.ts';
import { intlTag, type Locale } from './locale.ts';

const NANO_PER_CENT = 10_000_000n;

// Intl formatters are costly to build and safe to share: one per locale and kind.
const cache = new Map<string, Intl.NumberFormat | Intl.DateTimeFormat>();
function cached<T extends Intl.NumberFormat | Intl.DateTimeFormat>(key: string, make: () => T): T {
  let f = cache.get(key);
  if (!f) cache.set(key, (f = make()));
  return f as T;
}

const numbers = (l: Locale, digits: number) =>
  cached(`n:${l}:${digits}`, () => new Intl.NumberFormat(intlTag(l), { minimumFractionDigits: digits, maximumFractionDigits: digits }));
// Down and up as core/money.ts's Rounding means them: toward minus and plus infinity.
const dollars = (l: Locale, maxDigits: number, rounding: Rounding) =>
  cached(
    `usd:${l}:${maxDigits}:${rounding}`,
    () =>
      new Intl.NumberFormat(intlTag(l), {
        style: 'currency',
        currency: 'USD',
        minimumFractionDigits: 2,
        maximumFractionDigits: maxDigits,
        roundingMode: rounding === 'down' ? 'floor' : 'ceil',
      } as Intl.NumberFormatOptions),
  );

/** Intl formats a decimal string exactly (Intl.NumberFormat v3); the lib types here know only numbers. */
const formatDecimal = (f: Intl.NumberFormat, decimal: string) => f.format(decimal as unknown as number);

/** nano-USD as an exact decimal string of `unit` (1000 = credits, 1e9 = dollars). */
function decimalOf(nano: bigint, unit: bigint, digits: number): string {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  return `${sign}${abs / unit}.${(abs % unit).toString().padStart(digits, '0')}`;
}

export const integer = (l: Locale, n: number | bigint): string => numbers(l, 0).format(n);

/** A count that may have a fraction (video seconds), grouped, as many decimals as it has (up to six). */
export const decimal = (l: Locale, n: number): string =>
  cached(`dec:${l}`, () => new Intl.NumberFormat(intlTag(l), { maximumFractionDigits: 6 })).format(n);

/** Whole credits with the locale's grouping; a dash for none. */
export const wholeCredits = (l: Locale, n: number | null | undefined): string => (n === null || n === undefined ? '—' : integer(l, n));

/** Exact credits of a nano-USD amount (1 credit = 1,000 nano-USD): three decimals, never rounded. */
export const exactCredits = (l: Locale, nano: bigint): string => formatDecimal(numbers(l, 3), decimalOf(nano, 1000n, 3));

/**
 * Dollars of a nano-USD amount: cents from one cent up (rounded as the caller says: the credits beside it stay
 * exact), and below a cent every digit down to the nano-USD, so $0.000123 does not read as $0.00.
 */
export function usdOfNano(l: Locale, nano: bigint, rounding: Rounding): string {
  const abs = nano < 0n ? -nano : nano;
  const subCent = abs !== 0n && abs < NANO_PER_CENT;
  return formatDecimal(dollars(l, subCent ? 9 : 2, rounding), decimalOf(nano, 1_000_000_000n, 9));
}

export const usdOfCredits = (l: Locale, credits: number, rounding: Rounding): string => usdOfNano(l, BigInt(credits) * 1000n, rounding);

/**
 * Money as the operator shows it: whole units of the display currency first, with the dollars beside
 * ("₩70,000 · $50.00"); dollars alone without one. Both round the one way the caller says (core/money.ts's
 * Rounding: down for what the wallet has, up for what was spent or is held).
 */
export const money = (l: Locale, currency: DisplayCurrency | null, nano: bigint, rounding: Rounding): string =>
  currency ? `${displayUnitsText(nano, currency, rounding, intlTag(l))} · ${usdOfNano(l, nano, rounding)}` : usdOfNano(l, nano, rounding);

const seoul = (l: Locale) =>
  cached(
    `t:${l}`,
    () =>
      new Intl.DateTimeFormat(l === 'ko' ? 'ko-KR' : 'en-CA', {
        timeZone: 'Asia/Seoul',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }),
  );

/** An instant in Korean time to the minute, labelled KST, as plain text (a sentence's part). */
export function timeText(l: Locale, iso: string): string {
  const d = new Date(iso);
  if (l === 'ko') return `${seoul(l).format(d)} KST`;
  const p = Object.fromEntries(
    seoul(l)
      .formatToParts(d)
      .map((x) => [x.type, x.value]),
  );
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute} KST`;
}

/** The same, with the ISO instant in the datetime attribute. */
export const time = (l: Locale, iso: string): Html => html`<time datetime="${new Date(iso).toISOString()}">${timeText(l, iso)}</time>`;

const calendar = (l: Locale, short: boolean) =>
  cached(
    `d:${l}:${short}`,
    () =>
      new Intl.DateTimeFormat(
        intlTag(l),
        short
          ? { timeZone: 'UTC', month: 'numeric', day: 'numeric' }
          : { timeZone: 'UTC', year: 'numeric', month: 'numeric', day: 'numeric' },
      ),
  );

/** A Korean calendar day (YYYY-MM-DD) as the locale writes dates: English keeps the ISO form. */
export const koreanDay = (l: Locale, day: string): string => (l === 'en' ? day : calendar(l, false).format(new Date(`${day}T12:00:00Z`)));

/** The day as a chart's axis label: month and day only. */
export const shortDay = (l: Locale, day: string): string =>
  l === 'en' ? day.slice(5) : calendar(l, true).format(new Date(`${day}T12:00:00Z`));
