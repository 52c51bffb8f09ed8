// Many rows as one parameter: a JSON array of objects, read back as a table by `json_to_recordset`. One function
// scan instead of a multi-argument `unnest` of an array per column, which PostgreSQL runs as a function and a
// tuplestore per column: a charge batch's write took about a third less server time (docs/benchmarks.md).

/** A value a JSON row carries: bigints travel as decimal strings and dates as ISO text, as their columns read them. */
export type JsonCell = string | number | boolean | bigint | Date | null | undefined | object;

/** A table's columns, "name type, name type, …", sent as one JSON parameter and read back under their names. */
interface JsonTable {
  /** `json_to_recordset(<param>::json) AS <alias>(<columns>)`. */
  from(param: string, alias: string): string;
  /** The parameter `from` reads: one object per row, its values in the columns' order. */
  json(rows: readonly (readonly JsonCell[])[]): string;
  readonly names: readonly string[];
}

// Text PostgreSQL's JSON reader refuses to turn into text: an escaped NUL, or an escaped surrogate (JSON.stringify
// escapes a lone one). Rare; when present, strings are made well-formed first, as `pg` sends text (U+FFFD).
const REFUSED_ESCAPE = /\\u(?:0000|d[89a-f])/i;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const wellFormed = (_: string, v: unknown): unknown =>
  typeof v === 'string' ? v.replace(LONE_SURROGATE, '\uFFFD').replaceAll('\0', '\uFFFD') : v;

function cellJson(v: JsonCell, replacer?: typeof wellFormed): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') return `"${v}"`;
  if (v instanceof Date) return `"${v.toISOString()}"`;
  return JSON.stringify(v, replacer) ?? 'null';
}

export function jsonTable(columns: string): JsonTable {
  const names = columns.split(',').map((c) => c.trim().split(/\s+/)[0]!);
  // Written by hand from the names, without an object per row: half the time of JSON.stringify on objects.
  const keys = names.map((name, i) => `${i === 0 ? '{' : ','}${JSON.stringify(name)}:`);
  const write = (rows: readonly (readonly JsonCell[])[], replacer?: typeof wellFormed): string => {
    let out = '[';
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r]!;
      if (r > 0) out += ',';
      for (let i = 0; i < keys.length; i++) out += keys[i]! + cellJson(row[i], replacer);
      out += '}';
    }
    return `${out}]`;
  };
  return {
    names,
    from: (param, alias) => `json_to_recordset(${param}::json) AS ${alias}(${columns})`,
    json(rows) {
      const json = write(rows);
      return REFUSED_ESCAPE.test(json) ? write(rows, wellFormed) : json;
    },
  };
}
