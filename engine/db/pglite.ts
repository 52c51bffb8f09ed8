// The embedded side of the Db seam: PGlite, one connection whose transaction holds a lock plain queries also wait
// for, so inside `transaction(fn)` use `tx`, never `db` (a `db.query` there would wait for the transaction that
// waits for it). Types are configured to match `pg`.

import type { Results, Transaction } from '@electric-sql/pglite';
import { PGlite, types } from '@electric-sql/pglite';
import {
  type Db,
  type Transaction as DbTransaction,
  GENERIC_PLANS_SQL,
  type Queryable,
  type QueryResult,
  type TransactionOptions,
} from './db.ts';
import { initialiseApart } from './pglite-init.ts';
import { PreparedStatements } from './pglite-prepared.ts';

interface PgliteDbOptions {
  /** Directory for the data files; omitted or 'memory://' → in memory. */
  dataDir?: string;
}

const parsers = {
  [types.INT8]: (v: string) => v,
};

type Runner = Pick<PGlite, 'query' | 'exec'> | Transaction;

function toResult<T>(r: Results<unknown> | undefined): QueryResult<T> {
  if (!r) return { rows: [], rowCount: 0 };
  const rows = (r.rows ?? []) as T[];
  const rowCount = r.affectedRows && r.affectedRows > 0 ? r.affectedRows : (r.rowCount ?? rows.length);
  return { rows, rowCount };
}

/** `prepared` runs the statements with parameters; `inTransaction`: `runner` is a transaction's. */
function wrap(runner: Runner, prepared: PreparedStatements, inTransaction: boolean): Queryable {
  return {
    async query<T>(sql: string, params?: unknown[]): Promise<QueryResult<T>> {
      const name = prepared.nameOf(sql, params);
      if (name) return toResult<T>(await prepared.run(name, sql, params!, inTransaction));
      if (params && params.length > 0) {
        return toResult<T>(await runner.query<unknown>(sql, params, { parsers }));
      }
      const all = await runner.exec(sql, { parsers });
      return toResult<T>(all[all.length - 1]);
    },
  };
}

/**
 * PGlite holds shared_buffers in WASM memory for the life of the process, and PostgreSQL's default 128 MB is far
 * above the embedded working set (docs/decisions/embedded-database.md); pages outside it come from the OS cache.
 */
export const EMBEDDED_SHARED_BUFFERS = '32MB';
const POSTGRES_DEFAULT_SHARED_BUFFERS = '128MB';

/**
 * Set with ALTER SYSTEM (postgresql.auto.conf), so initdb's own settings (time zone, date style) stay. A new
 * folder gets it when it is created (pglite-init.ts); this sets it in a folder created before that, from its
 * next start. A size an operator set with ALTER SYSTEM is kept.
 */
async function smallerSharedBuffers(pgl: PGlite): Promise<void> {
  const r = await pgl.query<{ size: string }>(`SELECT current_setting('shared_buffers') AS size`);
  if (r.rows[0]?.size === POSTGRES_DEFAULT_SHARED_BUFFERS) await pgl.exec(`ALTER SYSTEM SET shared_buffers = '${EMBEDDED_SHARED_BUFFERS}'`);
}

export async function openPglite(opts: PgliteDbOptions = {}): Promise<Db> {
  const dir = opts.dataDir && opts.dataDir !== 'memory://' ? opts.dataDir : undefined;
  if (dir) await initialiseApart(dir, EMBEDDED_SHARED_BUFFERS);
  const pgl = await PGlite.create(dir, { parsers });
  // An in-memory database never starts again: only a data folder keeps the setting for its next start.
  if (dir) await smallerSharedBuffers(pgl);
  const prepared = new PreparedStatements(pgl, parsers);
  const q = wrap(pgl, prepared, false);
  let closed = false;

  return {
    kind: 'pglite',
    query: (sql, params) => q.query(sql, params),
    transaction<T>(fn: (tx: DbTransaction) => Promise<T>, opts?: TransactionOptions): Promise<T> {
      return pgl.transaction(async (tx) => {
        if (opts?.genericPlans) await tx.exec(GENERIC_PLANS_SQL);
        const q = wrap(tx, prepared, true);
        // One connection, in this process: the COMMIT costs no round trip, and follows when fn returns.
        return fn({ query: q.query, queryAndCommit: q.query });
      });
    },
    async listen(channel, onPayload) {
      // Quoted, so the channel name keeps its case and may hold any character (as on the pg side).
      // (PGlite's own returned unlisten loses the quotes, so unlisten by the quoted name ourselves.)
      const quoted = `"${channel.replace(/"/g, '""')}"`;
      await pgl.listen(quoted, onPayload);
      return async () => {
        if (!closed) await pgl.unlisten(quoted, onPayload);
      };
    },
    async notify(channel, payload) {
      await pgl.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      if (closed) return;
      closed = true;
      await pgl.close();
    },
  };
}
