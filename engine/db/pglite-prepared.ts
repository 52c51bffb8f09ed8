// Statements with parameters run as named prepared statements on PGlite, as they do on PostgreSQL (pg.ts): the
// embedded server parses and plans the ledger's large statements once, not at every call. PGlite's own query()
// prepares an unnamed statement each time and crosses into the WASM five times; this crosses once, twice the first time.

import { type PGlite, parse, protocol, type Results } from '@electric-sql/pglite';
import { statementName } from './statement-names.ts';

type Parsers = Record<number, (v: string) => unknown>;

/** The named statements prepared on one PGlite instance, and their parameter types. */
export class PreparedStatements {
  private readonly paramTypes = new Map<string, number[]>();

  constructor(
    private readonly pgl: PGlite,
    private readonly parsers: Parsers,
  ) {}

  /** The statement's name when `sql` with `params` runs prepared; undefined: run it as PGlite does. */
  nameOf(sql: string, params: unknown[] | undefined): string | undefined {
    return params && params.length > 0 ? statementName(sql) : undefined;
  }

  /**
   * Runs the named statement; `inTransaction`: the caller holds PGlite's transaction lock (a plain query takes
   * it, as PGlite's query() does, and writes to the file system after).
   */
  async run(name: string, sql: string, params: unknown[], inTransaction: boolean): Promise<Results> {
    if (inTransaction) return this.pgl._runExclusiveQuery(() => this.execute(name, sql, params));
    return this.pgl._runExclusiveTransaction(async () => {
      const r = await this.pgl._runExclusiveQuery(() => this.execute(name, sql, params));
      await this.pgl.syncToFs();
      return r;
    });
  }

  private async execute(name: string, sql: string, params: unknown[]): Promise<Results> {
    const types = this.paramTypes.get(name) ?? (await this.prepare(name, sql));
    const values = params.map((v, i) => {
      if (v === null || v === undefined) return null;
      const serialize = this.pgl.serializers[types[i]!];
      return serialize ? serialize(v) : String(v);
    });
    const { serialize } = protocol;
    const message = concat([
      serialize.bind({ statement: name, values }),
      serialize.describe({ type: 'P' }),
      serialize.execute({}),
      serialize.sync(),
    ]);
    // Throws the statement's error once the whole message ran (the Sync included, so the session is ready again).
    const answer = await this.pgl.execProtocolStream(message, { syncToFs: false });
    return parse.parseResults(answer, this.pgl.parsers, { parsers: this.parsers })[0]!;
  }

  /** Parses the statement under its name once; its parameter types, from the server's description. */
  private async prepare(name: string, sql: string): Promise<number[]> {
    const { serialize } = protocol;
    const message = concat([serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()]);
    const types = parse.parseDescribeStatementResults(await this.pgl.execProtocolStream(message, { syncToFs: false }));
    this.paramTypes.set(name, types);
    return types;
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
