// What the admin API's bodies may hold: a JSON object of known fields, and amounts of credits.
import { errors } from '../core/errors.ts';
import { creditsOfAmount, type DisplayCurrency } from '../core/money.ts';

/** The largest credit amount one call accepts (keeps nano inside int8 with room to spare). */
const MAX_CREDITS = 9_000_000_000_000;

type Body = Record<string, unknown>;

/** The body as an object; 400 naming the first field that is not `allowed`. */
export function objectBody(body: unknown, allowed: readonly string[]): Body {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw errors.invalidRequest('The request body must be a JSON object.');
  for (const k of Object.keys(body)) {
    if (!allowed.includes(k)) throw errors.invalidRequest(`Unknown field '${k}'; allowed: ${allowed.join(', ')}.`, k);
  }
  return body as Body;
}

/**
 * Whole credits of money given to a wallet (a top-up, a new wallet's first credits): a JSON number of credits, or
 * text as a person types it ("$5", "₩7,000", "5,000,000"), read by core/money.ts's one reader (won only with a
 * display currency, rounded up to the credit so the wallet has the won named). 400 naming the field.
 */
export function wholeCredits(v: unknown, field: string, { min }: { min: number }, currency: DisplayCurrency | null): number {
  const read = typeof v === 'string' ? creditsOfAmount(v, currency, 'up') : null;
  const n = read && 'credits' in read ? Number(read.credits) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > MAX_CREDITS) {
    throw errors.invalidRequest(
      `${field} must be a whole number ${min > 0 ? 'from 1' : 'from 0'} to ${MAX_CREDITS} (credits; 1 credit = $0.000001), ` +
        `or an amount as text such as '$5'${currency ? ", '₩7,000'" : ''} or '5,000,000'.`,
      field,
    );
  }
  return n;
}

/** A lot's name: 1 to 40 characters once trimmed, or null/absent for none. */
export function labelFrom(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const label = typeof value === 'string' ? value.trim() : '';
  if ([...label].length < 1 || [...label].length > 40)
    throw errors.invalidRequest('label must be 1 to 40 characters (such as "2026 2학기"), or null for none.', 'label');
  return label;
}
