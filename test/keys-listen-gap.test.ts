// Issue 26: a key closed while another process's LISTEN connection was down is refused by that process as
// soon as its listener is back, not once its 30 s key cache expires.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { systemClock } from '../engine/core/clock.ts';
import type { Db } from '../engine/db/db.ts';
import { openPg } from '../engine/db/pg.ts';
import { createKeyService, type KeyService } from '../engine/keys/index.ts';
import { openTestPostgres, postgresAvailability, type TestPostgres } from './helpers/databases.ts';
import { makeWallet } from './helpers/key-doors.ts';

async function until(ms: number, probe: () => boolean | Promise<boolean>): Promise<number> {
  const start = Date.now();
  while (!(await probe())) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - start;
}

describe.skipIf(!postgresAvailability.ok)('a LISTEN reconnect flushes the key cache', () => {
  let pgServer: TestPostgres;
  let watcherDb: Db;
  let watcher: KeyService;
  let closer: KeyService;
  // Its own application_name, so the test ends this listener and no other test's.
  const appName = `listen-gap-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    pgServer = await openTestPostgres();
    const url = new URL(pgServer.url);
    url.searchParams.set('application_name', appName);
    watcherDb = await openPg({ url: url.toString(), max: 4 });
    // A cache far longer than the test: only the reconnect can make the watcher see the close.
    watcher = createKeyService(watcherDb, { clock: systemClock, cacheTtlMs: 10 * 60_000 });
    closer = createKeyService(pgServer.db, { clock: systemClock });
    await Promise.all([watcher.ready(), closer.ready()]);
  });

  afterAll(async () => {
    await watcher?.close();
    await closer?.close();
    await watcherDb?.close();
    await pgServer?.cleanup();
  });

  it('refuses a key closed while the listener was down, promptly after it reconnects', async () => {
    const walletId = await makeWallet(pgServer.db);
    const k = await closer.createApiKey(walletId);
    await watcher.authenticate(k.key, 'api'); // now cached in the watcher

    const killed = await pgServer.db.query<{ k: boolean }>(
      `SELECT pg_terminate_backend(pid) AS k FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`,
      [appName],
    );
    expect(killed.rows).toEqual([{ k: true }]);
    await until(5_000, () => watcherDb.seemsReachable?.() === false);

    // Closed from another connection while nobody listens for the watcher: its notification is lost.
    expect(await closer.closeKey(k.id)).toBe(true);

    await until(10_000, () => watcherDb.seemsReachable?.() === true);
    const after = await watcher.authenticate(k.key, 'api').then(
      () => 'served',
      (e: { status: number; type: string }) => `${e.status} ${e.type}`,
    );
    expect(after).toBe('401 authentication_error');
  });
});
