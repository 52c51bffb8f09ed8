// A fresh, migrated schema on a PostgreSQL server, selected through the connection's search_path, and
// dropped again by `cleanup()`. The tests and `npm run bench` use it so that runs never share tables.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import { openPg } from './pg.ts';

export interface ScratchSchema {
  /** Connection URL selecting the fresh schema. */
  url: string;
  schema: string;
  /** A Db on that schema (migrated unless asked not to). */
  db: Db;
  /** Closes `db` and drops the schema. */
  cleanup(): Promise<void>;
}

/** Whether the server at `url` answers, and why not. */
export async function probePostgres(url: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { ok: true };
  } catch (e) {
    return { ok: false, reason: `PostgreSQL at ${redactUrl(url)} did not answer: ${(e as Error).message}` };
  } finally {
    await client.end().catch(() => {});
  }
}

export const redactUrl = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

/** A URL that selects `schema` through the connection's search_path. */
export function urlWithSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

export async function openScratchSchema(serverUrl: string, opts: { migrate?: boolean } = {}): Promise<ScratchSchema> {
  const schema = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE SCHEMA "${schema}"`);
  const url = urlWithSchema(serverUrl, schema);
  const db = await openPg({ url, max: 30 });
  if (opts.migrate !== false) await migrate(db);
  let done = false;
  return {
    url,
    schema,
    db,
    async cleanup() {
      if (done) return;
      done = true;
      await db.close().catch(() => {});
      await adminQuery(serverUrl, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
  };
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl });
  c.on('error', () => {}); // the query below rejects with it
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}
