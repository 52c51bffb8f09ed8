// billing.yaml ledger.synchronous_commit: a money move's transaction may ask PostgreSQL not to wait for the disk
// flush of its COMMIT; that setting holds for that transaction alone, and the transaction commits as any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
let pgSchema: TestPostgres;
beforeAll(async () => {
  if (canRun) pgSchema = await openTestPostgres({ migrate: false });
});
afterAll(() => pgSchema?.cleanup());

describe.skipIf(!canRun)('a transaction that does not wait for the disk flush [postgres]', () => {
  it('runs with synchronous_commit off inside, leaves the connection as it was, and commits', async () => {
    const db = pgSchema.db;
    await db.query('CREATE TABLE flush_probe (n int)');
    const setting = async (q: { query: typeof db.query }) =>
      (await q.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`)).rows[0]!.s;
    const inside = await db.transaction(
      async (tx) => {
        await tx.query('INSERT INTO flush_probe VALUES (1)');
        return setting(tx);
      },
      { flushWal: false },
    );
    expect(inside).toBe('off');
    expect(await db.transaction((tx) => setting(tx))).toBe('on');
    expect(await setting(db)).toBe('on');
    expect((await db.query<{ n: number }>('SELECT n FROM flush_probe')).rows).toEqual([{ n: 1 }]);
  });
});
