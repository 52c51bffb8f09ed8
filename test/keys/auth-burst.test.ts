// Concurrent lookups of one uncached key share one query (engine/keys/service.ts), and a lookup begun after
// the key was closed never takes the answer of one begun before.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createKeyService, type KeyService } from '../../engine/keys/index.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const KEY_LOOKUP = /WHERE k\.secret_hash = \$1/;

/** `db` with its key lookups counted, and held back while `gate` is set. */
function watchedDb(db: Db) {
  const w = { lookups: 0, gate: null as Promise<void> | null };
  const query = async <T>(sql: string, params?: unknown[]) => {
    if (!KEY_LOOKUP.test(sql)) return db.query<T>(sql, params);
    w.lookups++;
    const gate = w.gate;
    const r = await db.query<T>(sql, params);
    if (gate) await gate;
    return r;
  };
  return { db: { ...db, query } as Db, w };
}

const refused = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e) => e as { status: number; message: string },
  );

/** A key service over the watched database, with one key of a new wallet. */
async function withOneKey(
  getDb: () => Db,
  walletId: string,
  use: (keys: KeyService, key: { id: string; key: string }, w: ReturnType<typeof watchedDb>['w']) => Promise<void>,
) {
  const { db, w } = watchedDb(getDb());
  const keys = createKeyService(db, { clock: systemClock });
  try {
    await keys.ready();
    await db.query('INSERT INTO wallets (id, owner_id) VALUES ($1, $2)', [walletId, 'owner']);
    await use(keys, await keys.createApiKey(walletId), w);
  } finally {
    await keys.close();
  }
}

describeEachDatabase('a burst of calls with one uncached key', (getDb) => {
  it('looks the key up once', async () => {
    await withOneKey(getDb, 'w_burst_1', async (keys, k, w) => {
      const before = w.lookups;
      const all = await Promise.all(Array.from({ length: 50 }, () => keys.authenticate(k.key, 'api')));
      expect(new Set(all.map((a) => a.keyId))).toEqual(new Set([k.id]));
      expect(w.lookups - before).toBe(1);
    });
  });

  it('a lookup begun after the key was closed reads it again and is refused', async () => {
    await withOneKey(getDb, 'w_burst_2', async (keys, k, w) => {
      let open!: () => void;
      w.gate = new Promise((r) => (open = r));
      const early = keys.authenticate(k.key, 'api'); // read while the key is open, answer held back
      while (w.lookups === 0) await new Promise((r) => setTimeout(r, 5));
      w.gate = null;
      expect(await keys.closeKey(k.id)).toBe(true);
      const late = await refused(keys.authenticate(k.key, 'api'));
      expect(late).toMatchObject({ status: 401, message: expect.stringContaining('closed') });
      open();
      await early.catch(() => undefined); // begun before the close: either answer is right
      expect(await refused(keys.authenticate(k.key, 'api'))).toMatchObject({ status: 401 });
    });
  });
});
