// Statements with parameters are prepared once per connection on PostgreSQL (engine/db/pg.ts), except those
// reading a table's whole row, which a column added by a newer process's migration would otherwise break.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
let schema: TestPostgres;
beforeAll(async () => {
  if (canRun) schema = await openTestPostgres({ migrate: false });
});
afterAll(() => schema?.cleanup());

describe.runIf(canRun)('prepared statements', () => {
  it('a statement with parameters is prepared on its connection, and run again by name', async () => {
    const sql = 'SELECT $1::int + 1 AS n';
    const prepared = await schema.db.transaction(async (tx) => {
      await tx.query(sql, [1]);
      const again = await tx.query<{ n: number }>(sql, [41]);
      expect(again.rows[0]!.n).toBe(42);
      return (await tx.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows.map((r) => r.statement);
    });
    expect(prepared).toContain(sql);
  });

  it('a whole-row read goes on working after another process adds a column to its table', async () => {
    await schema.db.query('CREATE TABLE rolling (id int PRIMARY KEY, a text)');
    await schema.db.query("INSERT INTO rolling VALUES (1, 'x')");
    const read = () =>
      schema.db.transaction(async (tx) => {
        await tx.query('SELECT $1::int AS warm', [1]); // the same pooled connection each time (pool of one in use)
        return (await tx.query<Record<string, unknown>>('SELECT * FROM rolling WHERE id = $1', [1])).rows[0];
      });
    expect(await read()).toEqual({ id: 1, a: 'x' });
    const other = new pg.Client({ connectionString: schema.url });
    await other.connect();
    await other.query('ALTER TABLE rolling ADD COLUMN b text');
    await other.end();
    expect(await read()).toEqual({ id: 1, a: 'x', b: null });
    const prepared = await schema.db.transaction(
      async (tx) => (await tx.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows,
    );
    expect(prepared.map((r) => r.statement)).not.toContain('SELECT * FROM rolling WHERE id = $1');
  });
});
