// Runs a test suite against every database kind the gateway supports.
//
//   import { describeEachDatabase } from './helpers/databases.ts';
//   describeEachDatabase('ledger', (getDb, kind) => {
//     it('…', async () => { const db = getDb(); … });
//   });
//
// - 'pglite': an in-memory PGlite, always. Fresh per describeEachDatabase call, migrated.
// - 'postgres': the server at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), in a
//   fresh schema per describeEachDatabase call (connection option `-c search_path=<schema>`), migrated,
//   dropped afterwards. When the server does not answer, the suite is skipped with the reason printed,
//   unless REQUIRE_POSTGRES=1, then it fails.
// `getDb()` is valid inside tests and beforeEach/afterEach hooks (opened in beforeAll, closed in afterAll).
//
// For tests that start other processes: `openTestPostgres()` gives a migrated fresh schema, a URL that
// selects it (pass it to child processes), a Db on it, and `cleanup()` (closes and drops the schema).
// `postgresAvailability` tells whether PostgreSQL answered and why not.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db } from '../../engine/db/db.ts';
import { migrate } from '../../engine/db/migrate.ts';
import { openPg } from '../../engine/db/pg.ts';
import { openPglite } from '../../engine/db/pglite.ts';

// vitest is loaded only under vitest, so scripts (benchmarks, fixtures) can use openTestPostgres too.
const vt = process.env.VITEST ? await import('vitest') : null;
const vitest = () => {
  if (!vt) throw new Error('describeEachDatabase runs under vitest only');
  return vt;
};

export type DatabaseKind = 'pglite' | 'postgres';
export const databaseKinds: readonly DatabaseKind[] = ['pglite', 'postgres'];

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
export const REQUIRE_POSTGRES = process.env.REQUIRE_POSTGRES === '1';

async function probePostgres(): Promise<{ ok: true } | { ok: false; reason: string }> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { ok: true };
  } catch (e) {
    return { ok: false, reason: `PostgreSQL at ${redact(TEST_DATABASE_URL)} did not answer: ${(e as Error).message}` };
  } finally {
    await client.end().catch(() => {});
  }
}

const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

export const postgresAvailability = await probePostgres();
let skipNoticePrinted = false;

/** A URL that selects `schema` through the connection's search_path. */
export function urlWithSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

export interface TestPostgres {
  /** Connection URL selecting the fresh schema. */
  url: string;
  schema: string;
  /** A Db on that schema (migrated). */
  db: Db;
  /** Closes `db` and drops the schema. */
  cleanup(): Promise<void>;
}

/** A fresh, migrated schema on the test PostgreSQL. Throws when PostgreSQL does not answer. */
export async function openTestPostgres(opts: { migrate?: boolean } = {}): Promise<TestPostgres> {
  if (!postgresAvailability.ok) throw new Error(postgresAvailability.reason);
  const schema = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA "${schema}"`);
  } finally {
    await admin.end();
  }
  const url = urlWithSchema(TEST_DATABASE_URL, schema);
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
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A migrated in-memory PGlite. */
export async function openTestPglite(): Promise<Db> {
  const db = await openPglite();
  await migrate(db);
  return db;
}

/** Opens a migrated test database of the given kind; `close()` also drops the PostgreSQL schema. */
export async function openTestDatabase(kind: DatabaseKind): Promise<{ db: Db; close(): Promise<void> }> {
  if (kind === 'pglite') {
    const db = await openTestPglite();
    return { db, close: () => db.close() };
  }
  const t = await openTestPostgres();
  return { db: t.db, close: () => t.cleanup() };
}

export function describeEachDatabase(
  title: string,
  fn: (getDb: () => Db, kind: DatabaseKind) => void,
  kinds: readonly DatabaseKind[] = databaseKinds,
): void {
  const { afterAll, beforeAll, describe, it } = vitest();
  for (const kind of kinds) {
    const name = `${title} [${kind}]`;
    if (kind === 'postgres' && !postgresAvailability.ok) {
      if (REQUIRE_POSTGRES) {
        describe(name, () => {
          it('PostgreSQL is required (REQUIRE_POSTGRES=1)', () => {
            throw new Error(postgresAvailability.reason);
          });
        });
      } else {
        if (!skipNoticePrinted) {
          skipNoticePrinted = true;
          console.warn(`[databases] skipping PostgreSQL suites: ${postgresAvailability.reason}`);
        }
        describe.skip(name, () => fn(() => {
          throw new Error('skipped');
        }, kind));
      }
      continue;
    }
    describe(name, () => {
      let opened: { db: Db; close(): Promise<void> } | undefined;
      beforeAll(async () => {
        opened = await openTestDatabase(kind);
      });
      afterAll(async () => {
        await opened?.close();
      });
      fn(() => {
        if (!opened) throw new Error(`${name}: database not open yet (use getDb() inside tests or hooks)`);
        return opened.db;
      }, kind);
    });
  }
}
