// Money is integer nano-USD (1e-9 USD) everywhere inside; one credit is 1,000 nano-USD, shown to clients in whole
// credits (a balance rounds down, usage rounds up). The rate is a constant, not a setting, because it is part of the
// public contract: changing it would silently rescale every key limit and balance clients were already told.

export const NANO_PER_CREDIT = 1000n;

/** The call id of a budget lease's reservation begins with this (engine/money/leases.ts); keys' limits tell leases apart by it. */
export const LEASE_CALL_PREFIX = 'lease:';
/** The call id of a video job's reservation begins with this: daily limits read what running jobs hold by it. */
export const VIDEO_CALL_PREFIX = 'video_';
const NANO_PER_USD = 1_000_000_000n;

/** Whole credits → nano. Throws on fractions, negatives and non-numbers. */
export function creditsToNano(credits: number | bigint): bigint {
  if (typeof credits === 'bigint') {
    if (credits < 0n) throw new RangeError('credits must not be negative');
    return credits * NANO_PER_CREDIT;
  }
  if (!Number.isSafeInteger(credits) || credits < 0) throw new RangeError('credits must be a non-negative whole number');
  return BigInt(credits) * NANO_PER_CREDIT;
}

/**
 * Which way an amount shown to people rounds to its last digit, chosen where it is shown by what the amount is:
 * `down` for what a wallet has (a balance, a lot's remainder, what a key or class may still spend), so it never
 * reads more than there is; `up` for what was spent or is held (a charge, a month's spend, a hold), so it never
 * reads less. An amount that is neither (a limit, a threshold or a top-up as typed, a rate) rounds up: typed won
 * are kept rounded down to the credit (creditsOfAmount), so up gives back the whole won typed.
 */
export type Rounding = 'down' | 'up';

/** n / d to a whole number, toward minus infinity (`down`) or plus infinity (`up`), whatever the signs. */
function divide(n: bigint, d: bigint, rounding: Rounding): bigint {
  const q = n / d; // toward zero
  if (q * d === n) return q;
  if (rounding === 'down') return n < 0n !== d < 0n ? q - 1n : q;
  return n < 0n !== d < 0n ? q : q + 1n;
}

/** Balance shown to clients: rounds down. */
export const nanoToCreditsFloor = (nano: bigint): bigint => divide(nano, NANO_PER_CREDIT, 'down');

/** Usage shown to clients: rounds up. */
export const nanoToCreditsCeil = (nano: bigint): bigint => divide(nano, NANO_PER_CREDIT, 'up');

/**
 * USD (as the catalog states it, a JS number or decimal string) → nano-USD, exact for up to 9 decimals.
 * Goes through the decimal text so 0.07 becomes 70,000,000 and not 69,999,999.
 */
export function usdToNano(usd: number | string): bigint {
  if (typeof usd !== 'number') return parseUsd(usd.trim(), usd);
  // Every call prices its usage with the catalog's few numbers: convert each once (docs/decisions/per-call-garbage.md).
  let nano = usdNumbers.get(usd);
  if (nano === undefined) {
    nano = parseUsd(numberToPlain(usd), usd);
    if (usdNumbers.size >= USD_NUMBERS_KEPT) usdNumbers.clear();
    usdNumbers.set(usd, nano);
  }
  return nano;
}

const USD_NUMBERS_KEPT = 4_096;

/** nano-USD → its exact decimal text in dollars, all nine places (`1.250000000`): what a CSV or an audit shows. */
export function usdText(nano: bigint): string {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  return `${sign}${abs / 1_000_000_000n}.${(abs % 1_000_000_000n).toString().padStart(9, '0')}`;
}

/** nano-USD → dollars as a JSON number (a `cost_usd` field): the double nearest the exact decimal. */
export const usdNumber = (nano: bigint): number => Number(usdText(nano));
const usdNumbers = new Map<number, bigint>();

function parseUsd(text: string, usd: number | string): bigint {
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) throw new RangeError(`not a USD amount: ${usd}`);
  const frac = (m[3] ?? '').padEnd(9, '0');
  if (frac.length > 9 && /[1-9]/.test(frac.slice(9))) throw new RangeError(`USD amount finer than nano: ${usd}`);
  const v = BigInt(m[2]!) * NANO_PER_USD + BigInt(frac.slice(0, 9));
  return m[1] ? -v : v;
}

function numberToPlain(n: number): string {
  if (!Number.isFinite(n)) throw new RangeError(`not a USD amount: ${n}`);
  // toPrecision(15) drops binary noise (0.1+0.2), then strip exponent form.
  const s = Number(n.toPrecision(15)).toString();
  if (!/e/i.test(s)) return s;
  return Number(n.toPrecision(15))
    .toFixed(12)
    .replace(/\.?0+$/, '');
}

/**
 * The one parser for integers read back from the database, amounts and sequence numbers alike (int8
 * arrives as a decimal string; a bigint or a safe integer number is taken as is). Anything else is a bug upstream (a NULL column, a
 * fraction, text that is not a number) and throws a TypeError naming the value: a money figure is never
 * guessed, and never silently 0. Callers that allow NULL check for it first.
 */
export function toBigInt(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  throw new TypeError(`not an integer amount: ${typeof v === 'string' ? JSON.stringify(v) : String(v)}`);
}

/**
 * The operator's display currency (billing.yaml `display_currency`): how many of its units a dollar buys.
 * A display and input conversion only: the ledger stays nano-USD, and figures in it are shown in whole units.
 */
export interface DisplayCurrency {
  /** ISO 4217 code, such as KRW. */
  code: string;
  /** Units per US dollar, such as 1400. */
  per_usd: number;
}

const NANO_SQUARED = NANO_PER_USD * NANO_PER_USD;

/** Whole units of the display currency for a nano-USD amount, rounded as the caller says. */
export function nanoToDisplayUnits(nano: bigint, currency: DisplayCurrency, rounding: Rounding): bigint {
  return divide(nano * usdToNano(currency.per_usd), NANO_SQUARED, rounding);
}

/**
 * Whole units of the display currency for each of `parts` and for their total, the total rounded up as a charge
 * is and the parts adding up to it: each part rounds down, and the units left over go one each to the parts with
 * the largest remainders (earliest first on a tie). A statement whose lines add up to its total can be checked.
 */
export function displayUnitsAddingUp(parts: readonly bigint[], currency: DisplayCurrency): { parts: bigint[]; total: bigint } {
  const total = nanoToDisplayUnits(
    parts.reduce((a, n) => a + n, 0n),
    currency,
    'up',
  );
  const down = parts.map((nano) => nanoToDisplayUnits(nano, currency, 'down'));
  let left = total - down.reduce((a, n) => a + n, 0n);
  const perUsd = usdToNano(currency.per_usd);
  const byRemainder = parts
    .map((nano, i) => ({ i, rem: nano * perUsd - down[i]! * NANO_SQUARED }))
    .sort((a, b) => (b.rem > a.rem ? 1 : b.rem < a.rem ? -1 : a.i - b.i));
  for (const { i, rem } of byRemainder) {
    if (left === 0n || rem === 0n) break;
    down[i] = down[i]! + 1n;
    left -= 1n;
  }
  if (left !== 0n) throw new Error(`display units do not add up: ${left} left over`); // ceil(sum) - sum(floors) < parts with a remainder + 1
  return { parts: down, total };
}

const unitFormats = new Map<string, Intl.NumberFormat>();

/**
 * Whole units of the display currency as a language writes them ("₩70,000"), rounded as the caller says; an
 * amount under one unit but not zero reads "<₩1" either way, so a call that cost something never reads as free
 * and a balance never reads as a whole won it does not have.
 */
export function displayUnitsText(nano: bigint, currency: DisplayCurrency, rounding: Rounding, languageTag = 'en-US'): string {
  const key = `${languageTag}:${currency.code}`;
  let f = unitFormats.get(key);
  if (!f)
    unitFormats.set(
      key,
      (f = new Intl.NumberFormat(languageTag, { style: 'currency', currency: currency.code, maximumFractionDigits: 0 })),
    );
  // Intl formats a decimal string exactly; the lib types know only numbers.
  const text = (n: bigint) => f.format(n.toString() as unknown as number);
  const underOne = nano !== 0n && nanoToDisplayUnits(nano < 0n ? -nano : nano, currency, 'down') === 0n;
  return underOne ? `<${text(1n)}` : text(nanoToDisplayUnits(nano, currency, rounding));
}

const NANO_PER_CENT = 10_000_000n;

/** Dollars of nano-USD for the operator's tools: cents from a cent up (rounded as the caller says), every digit below one. */
function dollarsText(nano: bigint, rounding: Rounding): string {
  const abs = nano < 0n ? -nano : nano;
  const sign = nano < 0n ? '-' : '';
  if (abs !== 0n && abs < NANO_PER_CENT) return `${sign}$0.${abs.toString().padStart(9, '0').replace(/0+$/, '')}`;
  const signed = divide(nano, NANO_PER_CENT, rounding);
  const cents = signed < 0n ? -signed : signed;
  return `${sign}$${(cents / 100n).toLocaleString('en-US')}.${(cents % 100n).toString().padStart(2, '0')}`;
}

/**
 * Money as the operator's tools show it beside credits (the admin API's and the CLI's answers, the CSV
 * downloads, the webhook payloads): "₩70,000 · $50.00" with a display currency, "$50.00" without, both
 * figures rounded the one way the caller says (`Rounding`).
 */
export const moneyText = (nano: bigint, currency: DisplayCurrency | null, rounding: Rounding): string =>
  currency ? `${displayUnitsText(nano, currency, rounding)} · ${dollarsText(nano, rounding)}` : dollarsText(nano, rounding);

/** Why a typed amount was refused; the caller words it (the dashboard in the owner's language). */
type AmountRefusal = 'not_amount' | 'not_dollars' | 'decimals' | 'too_large' | 'not_display_units';

// Grouped with commas ("1,000,000") or plain digits.
const GROUPED = /^\d{1,3}(?:,\d{3})+$|^\d+$/;
const DOLLARS = [/^(?:US)?\$\s*([\d,]+(?:\.\d*)?)$/i, /^([\d,]+(?:\.\d*)?)\s*(?:\$|USD|dollars?|달러)$/i];
const CREDITS = /^([\d,]+)\s*(?:credits?|크레딧)?$/i;
// Signs a display currency is written with beside its code: won as ₩ (or the full-width ￦) and 원.
const DISPLAY_SIGNS: Record<string, string[]> = { KRW: ['₩', '￦', '원'] };
/** The largest amount of credits one input may name (keeps nano inside int8 with room to spare). */
const MAX_INPUT_CREDITS = 9_000_000_000_000n;

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function displayPattern(currency: DisplayCurrency): RegExp[] {
  const signs = [currency.code, ...(DISPLAY_SIGNS[currency.code] ?? [])].map(escapeRe).join('|');
  return [new RegExp(`^(?:${signs})\\s*([\\d,]+(?:\\.\\d*)?)$`, 'i'), new RegExp(`^([\\d,]+(?:\\.\\d*)?)\\s*(?:${signs})$`, 'i')];
}

/**
 * The one reader of an amount a person types (the dashboard's forms, the CLI, the admin API's text amounts):
 * credits ("500000", "1,000,000", "1,000,000 credits", "1,000,000 크레딧"), dollars ("$5", "5 USD",
 * "US$0.50", "5달러"), or, with a display currency, whole units of it ("₩50,000", "7000원", "KRW 7000").
 * Answers whole credits. An amount in the display currency falls between two credits and rounds as the caller
 * says: down for a figure that caps (a limit, a threshold), so it never allows more than the won it names; up for
 * money given (a top-up), so a wallet topped up with ₩100,000 has ₩100,000 and not ₩99,999.9994.
 */
export function creditsOfAmount(
  text: string,
  currency: DisplayCurrency | null,
  rounding: Rounding = 'down',
): { credits: bigint } | { refused: AmountRefusal } {
  const s = text.trim().replace(/\s+/g, ' ');
  const bounded = (credits: bigint) => (credits > MAX_INPUT_CREDITS ? { refused: 'too_large' as const } : { credits });
  const units = currency
    ? displayPattern(currency)
        .map((re) => re.exec(s))
        .find((m) => m !== null)
    : null;
  if (units && currency) {
    const figure = units[1]!; // both patterns' one group, never optional
    if (!GROUPED.test(figure)) return { refused: 'not_display_units' };
    const whole = BigInt(figure.replace(/,/g, ''));
    return bounded(divide(whole * NANO_SQUARED, usdToNano(currency.per_usd) * NANO_PER_CREDIT, rounding));
  }
  const dollars = DOLLARS.map((re) => re.exec(s)).find((m) => m !== null);
  if (dollars) {
    const [whole = '', frac = ''] = dollars[1]!.split('.');
    if (!GROUPED.test(whole)) return { refused: 'not_dollars' };
    if (frac.length > 6) return { refused: 'decimals' };
    return bounded(BigInt(whole.replace(/,/g, '')) * 1_000_000n + BigInt(frac.padEnd(6, '0')));
  }
  const plain = CREDITS.exec(s);
  if (plain && GROUPED.test(plain[1]!)) return bounded(BigInt(plain[1]!.replace(/,/g, '')));
  return { refused: 'not_amount' };
}
