// Many rows as one parameter: a JSON array of objects, read back as a table by `json_to_recordset`. One function
// scan instead of a multi-argument `unnest` of an array per column, which PostgreSQL runs as a function and a
// tuplestore per column: a charge batch's write took about a third less server time (docs/benchmarks.md).

/** A value a JSON row carries: bigints travel as decimal strings and dates as ISO text, as their columns read them. */
export type JsonCell = string | number | boolean | bigint | Date | null | undefined | object;

/** `json_to_recordset(<param>::json) AS <alias>(<columns>)`, with columns written as "name type, name type, …". */
export const recordset = (param: string, alias: string, columns: string): string =>
  `json_to_recordset(${param}::json) AS ${alias}(${columns})`;

/** The column names of a "name type, name type, …" list, in order. */
export const columnNames = (columns: string): string[] => columns.split(',').map((c) => c.trim().split(/\s+/)[0]!);

// Text PostgreSQL's JSON reader refuses to turn into text: an escaped NUL, or an escaped surrogate (JSON.stringify
// escapes a lone one). Rare; when present, strings are made well-formed first, as `pg` sends text (U+FFFD).
const REFUSED_ESCAPE = /\\u(?:0000|d[89a-f])/i;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const cell = (v: JsonCell): unknown => (typeof v === 'bigint' ? v.toString() : v instanceof Date ? v.toISOString() : v);
const wellFormed = (_: string, v: unknown): unknown =>
  typeof v === 'string' ? v.replace(LONE_SURROGATE, '\uFFFD').replaceAll('\0', '\uFFFD') : v;

/** The parameter `recordset` reads: one object per row, its keys the column names, its values by `names`' order. */
export function jsonRows(names: readonly string[], rows: readonly (readonly JsonCell[])[]): string {
  const objects = rows.map((row) => {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) o[names[i]!] = cell(row[i]);
    return o;
  });
  const json = JSON.stringify(objects);
  return REFUSED_ESCAPE.test(json) ? JSON.stringify(objects, wellFormed) : json;
}
