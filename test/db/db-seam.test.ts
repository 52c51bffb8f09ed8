import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.ts';

describeEachDatabase('db seam', (getDb) => {
  it('works', async () => {
    const db = getDb();
    const r = await db.query<{ n: string; v: string[] }>("select count(*) as n, array['c']::text[] as v from wallets");
    expect(r.rows[0]).toEqual({ n: '0', v: ['c'] });
    await db.query('insert into wallets(id, owner_id) values ($1,$2)', ['w1', 'o']);
    const u = await db.query("update wallets set key_slots = key_slots + 1 where id = 'w1'");
    expect(u.rowCount).toBe(1);
    const p = await db.query<{ x: string }>('select $1::bigint + 1 as x, $2::text[] as arr', ['9007199254740993', ['a', 'c']]);
    expect(p.rows[0]).toEqual({ x: '9007199254740994', arr: ['a', 'c'] });
    await expect(
      db.transaction(async (tx) => {
        await tx.query("insert into wallets(id, owner_id) values ('w2','o')");
        throw new Error('x');
      }),
    ).rejects.toThrow('x');
    expect((await db.query('select id from wallets')).rows.length).toBe(1);
    const got: string[] = [];
    const un = await db.listen('chan-x', (p) => got.push(p));
    await db.notify('chan-x', 'hello');
    for (let i = 0; i < 50 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual(['hello']);
    await un();
    // concurrent transactions
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        db.transaction(async (tx) => {
          await tx.query('insert into wallets(id, owner_id) values ($1, $2)', [`c${i}`, 'o']);
        }),
      ),
    );
    expect((await db.query<{ n: string }>('select count(*) n from wallets')).rows[0]!.n).toBe('21');
  });
});

describeEachDatabase(
  'db seam listen reconnect',
  (getDb) => {
    it('re-LISTENs after the listener connection is killed', async () => {
      const db = getDb();
      const got: string[] = [];
      let gaps = 0;
      const un = await db.listen(
        'Reconnect Channel',
        (p) => got.push(p),
        () => gaps++,
      );
      expect(gaps).toBe(0);
      const killed = await db.query(`SELECT pg_terminate_backend($1::int) AS k`, [db.listenerPid?.()]);
      expect(killed.rows).toEqual([{ k: true }]);
      for (let i = 0; i < 100 && !got.includes('after'); i++) {
        await db.notify('Reconnect Channel', 'after').catch(() => {});
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(got).toContain('after');
      expect(gaps).toBe(1); // told once that notifications may have been lost
      // Back on a new connection, which is listed as listening again (a key change waits for each one listed).
      expect(await db.listeners?.('Reconnect Channel')).toContain(db.listenerPid?.());
      await un();
    });

    it('lists the connections listening on a channel, until they stop', async () => {
      const db = getDb();
      const un = await db.listen('Listed Channel', () => undefined);
      const me = db.listenerPid?.();
      expect(me).toBeTypeOf('number');
      expect(await db.listeners?.('Listed Channel')).toContain(me);
      expect(await db.listeners?.('Another Channel')).not.toContain(me);
      await un();
      expect(await db.listeners?.('Listed Channel')).not.toContain(me);
    });
  },
  ['postgres'],
);
