// Array parameters for PostgreSQL, written as array literals with one JSON.stringify. The ledger's batch
// writes and the usage records send dozens of arrays of ids, amounts and times per statement, and `pg`
// quotes every element with two regular expressions and a string concatenation: at 32 connections that
// was the largest single allocation per call (6.4 KB of 68). JSON quotes a string exactly as an array
// literal does as long as it escapes nothing, so an array of plain strings, finite numbers and nulls whose
// JSON holds no backslash is already a literal between its brackets. Anything else (a quote, a backslash, a
// control character, a Date, a nested array, a bigint) goes to `pg` as it is.
export function arrayLiteral(values: readonly unknown[]): string | null {
  for (const v of values) {
    if (v === null || v === undefined || typeof v === 'string') continue;
    if (typeof v === 'number' && Number.isFinite(v)) continue;
    return null;
  }
  const json = JSON.stringify(values);
  if (json.includes('\\')) return null;
  return `{${json.slice(1, -1)}}`;
}

/** `params` with every array the fast way where it can be (arrayLiteral); the same array when none is. */
export function withArrayLiterals(params: unknown[]): unknown[] {
  let out: unknown[] | null = null;
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (!Array.isArray(p)) continue;
    const literal = arrayLiteral(p);
    if (literal === null) continue;
    out ??= params.slice();
    out[i] = literal;
  }
  return out ?? params;
}
