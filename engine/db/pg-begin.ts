// A transaction's BEGIN (and its SET LOCAL settings) rides in the same flight as its first statement: the
// prelude's statements, prepared by name on the connection, are bound and executed just before the statement's
// own messages, before one Sync. That saves a round trip per transaction, which at one connection is a wake-up of
// both processes. Nothing can commit in that flight, so a connection lost during it leaves nothing behind.
import pg from 'pg';

/** The prelude's statement texts: BEGIN, then each setting, one statement apiece as the extended protocol needs. */
export function preludeStatements(flushWal: boolean, lockTimeoutMs: number | undefined, snapshot = false): string[] {
  const out = [snapshot ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN'];
  if (!flushWal) out.push('SET LOCAL synchronous_commit = off');
  if (lockTimeoutMs !== undefined) out.push(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
  return out;
}

const nameOf = (text: string) => `gw_prelude_${text.replace(/\W+/g, '_').toLowerCase()}`;

/** Prelude texts prepared on one connection at most (a caller passing ever new timeouts gets the plain BEGIN). */
const MAX_PRELUDE_TEXTS = 8;

interface Connection {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  bind(config: { statement: string; values: unknown[] }): void;
  execute(config: Record<string, never>): void;
}

type Submit = (connection: Connection) => Error | null;

/** A pg query whose messages follow the prelude's bind and execute messages, in one write. */
function preludedQuery(config: pg.QueryConfig & { callback: (err: Error | null, r?: unknown) => void }, prelude: string[]) {
  const query = new pg.Query(config) as unknown as { submit: Submit };
  const own = query.submit.bind(query);
  query.submit = (connection) => {
    connection.stream.cork?.();
    try {
      for (const text of prelude) {
        connection.bind({ statement: nameOf(text), values: [] });
        connection.execute({});
      }
      return own(connection);
    } finally {
      connection.stream.uncork?.();
    }
  };
  return query;
}

const connectionOf = (client: pg.PoolClient) => (client as unknown as { connection: Connection }).connection;

/** Whether every prelude statement is prepared on the client's connection (then the prelude can ride along). */
function preparedOn(client: pg.PoolClient, prelude: string[]): boolean {
  const parsed = connectionOf(client).parsedStatements;
  return prelude.every((text) => parsed[nameOf(text)] === text);
}

/**
 * The first statement of a transaction, with the prelude ahead of it in one flight when the connection has the
 * prelude prepared. Otherwise the prelude goes first on its own: prepared by name on the way when the statement has
 * parameters (the next transaction on this connection then rides along), else in one simple-protocol message.
 */
export async function withPrelude(client: pg.PoolClient, prelude: string[], config: pg.QueryConfig): Promise<pg.QueryResult> {
  if (!config.values || config.values.length === 0) {
    await client.query(prelude.join('; '));
    // The simple protocol, as any statement without parameters (it may hold several: a migration's file).
    return lastOf(await client.query(config.text));
  }
  if (!preparedOn(client, prelude)) {
    const parsed = connectionOf(client).parsedStatements;
    const known = Object.keys(parsed).filter((name) => name.startsWith('gw_prelude_')).length;
    if (known + prelude.length > MAX_PRELUDE_TEXTS) await client.query(prelude.join('; '));
    else for (const text of prelude) await client.query({ name: nameOf(text), text });
    return client.query(config);
  }
  const results = await new Promise<pg.QueryResult | pg.QueryResult[]>((resolve, reject) => {
    const callback = (err: Error | null, r?: unknown) => (err ? reject(err) : resolve(r as pg.QueryResult | pg.QueryResult[]));
    client.query(preludedQuery({ ...config, callback }, prelude) as never);
  });
  return lastOf(results); // the prelude's own results come first (BEGIN, SET)
}

const lastOf = (r: pg.QueryResult | pg.QueryResult[]): pg.QueryResult => (Array.isArray(r) ? r[r.length - 1]! : r);
