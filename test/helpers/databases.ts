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
import type { Db } from '../../engine/db/db.ts';
import { migrate } from '../../engine/db/migrate.ts';
import { openPglite } from '../../engine/db/pglite.ts';
import { openScratchSchema, probePostgres, type ScratchSchema, urlWithSchema } from '../../engine/db/scratch-schema.ts';

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

export const postgresAvailability = await probePostgres(TEST_DATABASE_URL);
let skipNoticePrinted = false;

export { urlWithSchema };
export type TestPostgres = ScratchSchema;

/** A fresh, migrated schema on the test PostgreSQL. Throws when PostgreSQL does not answer. */
export async function openTestPostgres(opts: { migrate?: boolean } = {}): Promise<TestPostgres> {
  if (!postgresAvailability.ok) throw new Error(postgresAvailability.reason);
  return openScratchSchema(TEST_DATABASE_URL, opts);
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
        describe.skip(name, () =>
          fn(() => {
            throw new Error('skipped');
          }, kind),
        );
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
