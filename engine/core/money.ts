// Money is integer nano-USD (1e-9 USD) everywhere inside. One credit = 1,000 nano-USD ($0.000001).
// Credits shown to clients are whole numbers: a balance rounds down, usage rounds up.
//
// The credit is not configurable. Balances, reservations and quota usage are stored in nano-USD, while key
// limits are stored in credits and every client-facing figure (balances, limits, usage, error messages) is
// shown in credits: the rate is part of the public contract, and changing it would silently rescale every
// key limit and every balance clients have already been told. So it is a constant here, not a config key.

export const NANO_PER_CREDIT = 1000n;
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

/** Balance shown to clients: rounds down. */
export const nanoToCreditsFloor = (nano: bigint): bigint => (nano >= 0n ? nano / NANO_PER_CREDIT : -ceilDiv(-nano, NANO_PER_CREDIT));

/** Usage shown to clients: rounds up. */
export const nanoToCreditsCeil = (nano: bigint): bigint => (nano >= 0n ? ceilDiv(nano, NANO_PER_CREDIT) : -(-nano / NANO_PER_CREDIT));

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/**
 * USD (as the catalog states it, a JS number or decimal string) → nano-USD, exact for up to 9 decimals.
 * Goes through the decimal text so 0.07 becomes 70,000,000 and not 69,999,999.
 */
export function usdToNano(usd: number | string): bigint {
  if (typeof usd !== 'number') return parseUsd(usd.trim(), usd);
  // Every call prices its usage with the catalog's few numbers: convert each once (the text round trip was 2% of a call's CPU).
  let nano = usdNumbers.get(usd);
  if (nano === undefined) {
    nano = parseUsd(numberToPlain(usd), usd);
    if (usdNumbers.size >= USD_NUMBERS_KEPT) usdNumbers.clear();
    usdNumbers.set(usd, nano);
  }
  return nano;
}

const USD_NUMBERS_KEPT = 4_096;
const usdNumbers = new Map<number, bigint>();

function parseUsd(text: string, usd: number | string): bigint {
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) throw new RangeError(`not a USD amount: ${usd}`);
  const frac = (m[3] ?? '').padEnd(9, '0');
  if (frac.length > 9 && /[1-9]/.test(frac.slice(9))) throw new RangeError(`USD amount finer than nano: ${usd}`);
  const v = BigInt(m[2]) * NANO_PER_USD + BigInt(frac.slice(0, 9));
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
