// Statements with parameters are prepared once per connection on PostgreSQL (engine/db/pg.ts) and once per
// instance on PGlite, except those reading a table's whole row, which a column added by a newer process's
// migration would otherwise break.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../engine/db/db.ts';
import { openPglite } from '../../engine/db/pglite.ts';
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

describe('prepared statements on PGlite (engine/db/pglite-prepared.ts)', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openPglite();
  });
  afterAll(() => db?.close());

  it('a statement with parameters is prepared once, then run by name with the same types as PGlite gives', async () => {
    const sql = `SELECT $1::bigint AS big, $2::numeric AS num, $3::timestamptz AS at, $4::jsonb AS doc, $5::text[] AS names,
                        $6::text AS nothing, $7::int + 1 AS n`;
    const params = ['9007199254740993', '1.50', '2026-11-29T01:02:03.000Z', '{"a":[1,2]}', ['x', 'y,z'], null, 41];
    const first = await db.query(sql, params);
    const again = await db.transaction((tx) => tx.query(sql, params));
    const expected = {
      big: '9007199254740993',
      num: '1.50',
      at: new Date('2026-11-29T01:02:03.000Z'),
      doc: { a: [1, 2] },
      names: ['x', 'y,z'],
      nothing: null,
      n: 42,
    };
    expect(first.rows).toEqual([expected]);
    expect(again.rows).toEqual([expected]);
    const prepared = await db.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements');
    expect(prepared.rows.map((r) => r.statement)).toContain(sql);
  });

  it('an error keeps its SQLSTATE, rolls its transaction back, and the next statement runs', async () => {
    await db.query('CREATE TABLE once (id int PRIMARY KEY)');
    const insert = 'INSERT INTO once (id) VALUES ($1)';
    await db.query(insert, [1]);
    await expect(db.query(insert, [1])).rejects.toMatchObject({ code: '23505' });
    await expect(
      db.transaction(async (tx) => {
        await tx.query(insert, [2]);
        await tx.query(insert, [1]);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    await db.query(insert, [3]);
    const ids = await db.query<{ id: number }>('SELECT id FROM once WHERE id > $1 ORDER BY id', [0]);
    expect(ids.rows.map((r) => r.id)).toEqual([1, 3]);
    expect((await db.query<{ rowCount: number }>('UPDATE once SET id = id + 10 WHERE id > $1', [0])).rowCount).toBe(2);
  });
});
