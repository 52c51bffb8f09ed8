// Statements with parameters are prepared once per connection (pg.ts) or per embedded instance (pglite-prepared.ts),
// by a name derived from their text: the server then parses and plans the ledger's large statements once, not at
// every call. Our SQL texts are fixed strings (values go in parameters), so the names are few; past MAX_PREPARED
// texts, a statement runs unnamed. A text whose columns are a table's whole row (`SELECT *`, `RETURNING t.*`) is
// never prepared: a migration adding a column, run by a newer process during a rolling restart, would fail it
// here ("cached plan must not change result type") until this process restarts.
import { createHash } from 'node:crypto';

const MAX_PREPARED = 1_000;
const WHOLE_ROW = /(?:SELECT|RETURNING|,)\s+(?:\w+\.)?\*/i;
const statementNames = new Map<string, string | undefined>();

/** The name `sql` is prepared under, or undefined when it runs unnamed. */
export function statementName(sql: string): string | undefined {
  if (statementNames.has(sql)) return statementNames.get(sql);
  let name: string | undefined;
  if (statementNames.size < MAX_PREPARED && !WHOLE_ROW.test(sql)) {
    name = `s${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
  }
  statementNames.set(sql, name);
  return name;
}
