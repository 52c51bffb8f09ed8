// On PostgreSQL a transaction's statements are pipelined (engine/db/pg.ts): BEGIN and its SET LOCAL settings ride in
// one flight with its first statement, statements sent in one turn share a flight, and `queryAndCommit` sends the
// COMMIT with its statement. Counted here as the writes the client sends through a loopback proxy.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../engine/db/db.ts';
import { type CountingProxy, postgresThroughProxy } from '../helpers/counting-proxy.ts';
import { postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;

describe.runIf(canRun)('a pipelined transaction', () => {
  const through = postgresThroughProxy({ migrate: false });
  let db: Db;
  let proxy: CountingProxy;

  beforeAll(async () => {
    ({ db, proxy } = through);
    await db.query('CREATE TABLE begun (id int PRIMARY KEY)');
  });

  const twoStatements = (tx: { query: Db['query'] }) =>
    tx.query('INSERT INTO begun (id) VALUES ($1)', [1]).then(() => tx.query('DELETE FROM begun WHERE id = $1', [1]));

  it('a transaction of two statements sends three flights: BEGIN with the first, the second, COMMIT', async () => {
    proxy.flights = 0;
    await db.transaction(twoStatements, { lockTimeoutMs: 1_500 });
    expect(proxy.flights).toBe(3);
  });

  it('statements sent in one turn share a flight, and the last one carries the COMMIT', async () => {
    proxy.flights = 0;
    await db.transaction(async (tx) => {
      const inserted = tx.query('INSERT INTO begun (id) VALUES ($1)', [30]);
      const read = tx.query<{ n: string }>('SELECT count(*)::text AS n FROM begun WHERE id = $1', [30]);
      await Promise.all([inserted, read]);
      expect((await read).rows[0]!.n).toBe('1');
      await tx.queryAndCommit('DELETE FROM begun WHERE id = $1', [30]);
    });
    expect(proxy.flights).toBe(2);
    expect((await db.query('SELECT id FROM begun WHERE id = $1', [30])).rows).toEqual([]);
  });

  it('a statement that fails with its COMMIT rejects, commits nothing, and leaves the connection usable', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO begun (id) VALUES ($1)', [40]);
        await tx.queryAndCommit('INSERT INTO begun (id) VALUES ($1)', [40]); // the same key again
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect((await db.query('SELECT id FROM begun WHERE id = $1', [40])).rows).toEqual([]);
    await expect(db.transaction((tx) => tx.query<{ one: number }>('SELECT $1::int AS one', [1]))).resolves.toMatchObject({
      rows: [{ one: 1 }],
    });
  });

  it('the first statement runs inside the transaction, under its settings', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO begun (id) VALUES ($1)', [7]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await db.query('SELECT id FROM begun WHERE id = $1', [7])).rows).toEqual([]);
    const setting = await db.transaction((tx) => tx.query<{ t: string }>('SELECT current_setting($1) AS t', ['lock_timeout']), {
      lockTimeoutMs: 1_234,
    });
    expect(setting.rows[0]!.t).toBe('1234ms');
    expect((await db.query<{ t: string }>('SELECT current_setting($1) AS t', ['lock_timeout'])).rows[0]!.t).toBe('0');
  });

  it('statements sent at once keep their order behind the first', async () => {
    const order = await db.transaction(
      async (tx) => {
        const [, , read] = await Promise.all([
          tx.query('INSERT INTO begun (id) VALUES ($1)', [20]),
          tx.query('INSERT INTO begun (id) VALUES ($1)', [21]),
          tx.query<{ id: number }>('SELECT id FROM begun WHERE id >= $1 ORDER BY id', [20]),
        ]);
        return read.rows.map((r) => r.id);
      },
      { lockTimeoutMs: 4_321 },
    );
    expect(order).toEqual([20, 21]);
  });

  it('a first statement without parameters may hold several statements (a migration file)', async () => {
    await db.transaction(async (tx) => {
      await tx.query('CREATE TABLE several (id int); INSERT INTO several VALUES (1), (2)');
      expect((await tx.query<{ n: string }>('SELECT count(*)::text AS n FROM several WHERE id > $1', [0])).rows[0]!.n).toBe('2');
    });
    expect((await db.query<{ id: number }>('SELECT id FROM several ORDER BY id')).rows.map((r) => r.id)).toEqual([1, 2]);
  });
});
