// Array parameters written as array literals with one JSON.stringify: `pg` quotes each element with regular
// expressions, which was the largest allocation per call (docs/decisions/per-call-garbage.md). Only arrays whose JSON
// is already a valid literal take this path; anything else goes to `pg` as it is.
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
