// A key change answers once every other process listening on the database has applied it (engine/keys/announce.ts):
// the other process's cache no longer holds the key when closeKey returns, with no wait for a timer; a process
// that listens but never confirms holds the change for the bounded wait only, and is logged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { openPg } from '../../engine/db/pg.ts';
import { KEY_CHANNEL } from '../../engine/keys/announce.ts';
import { createKeyService, type KeyService } from '../../engine/keys/index.ts';
import { openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';
import { makeWallet } from '../helpers/key-doors.ts';

describe.skipIf(!postgresAvailability.ok)('a key change waits for the other processes to apply it', () => {
  let pgServer: TestPostgres;
  let otherDb: Db;
  let other: KeyService;
  let changer: KeyService;
  const warnings: object[] = [];

  beforeAll(async () => {
    pgServer = await openTestPostgres();
    otherDb = await openPg({ url: pgServer.url, max: 4 });
    // Lookups kept far longer than the test: only the notification can drop them.
    other = createKeyService(otherDb, { clock: systemClock, cacheTtlMs: 10 * 60_000 });
    changer = createKeyService(pgServer.db, { clock: systemClock, appliedWaitMs: 500, warn: (o) => warnings.push(o) });
    await Promise.all([other.ready(), changer.ready()]);
  });

  afterAll(async () => {
    await other?.close();
    await changer?.close();
    await otherDb?.close();
    await pgServer?.cleanup();
  });

  it('the other process refuses a closed key as soon as closeKey returned, many times over', async () => {
    const walletId = await makeWallet(pgServer.db);
    for (let i = 0; i < 30; i++) {
      const k = await changer.createApiKey(walletId);
      await other.authenticate(k.key, 'api'); // cached there
      expect(await changer.closeKey(k.id)).toBe(true);
      // Synchronously after the return: no turn of the event loop for a late notification to land in.
      const seen = other.authenticate(k.key, 'api').then(
        () => 'served',
        (e: { status: number }) => e.status,
      );
      expect(await seen).toBe(401);
    }
  });

  it("a second change of one wallet waits for its own confirmation, not the first change's", async () => {
    // One connection sends both changes, so both have one sender pid and one payload (`wallet:<id>`).
    const oneConnection = await openPg({ url: pgServer.url, max: 1 });
    const sender = createKeyService(oneConnection, { clock: systemClock, appliedWaitMs: 500 });
    const listenerDb = await openPg({ url: pgServer.url, max: 1 });
    let confirming = true;
    // A process that applies the first change and then freezes: it echoes what it heard, as listenForChanges does.
    const stop = await listenerDb.listen(KEY_CHANNEL, (payload, senderPid) => {
      if (confirming) void listenerDb.notify('key_revoked_applied', `${listenerDb.listenerPid?.()} ${senderPid} ${payload}`);
    });
    try {
      await sender.ready();
      const walletId = await makeWallet(pgServer.db);
      const t0 = performance.now();
      await (await sender.announce([`wallet:${walletId}`])).applied();
      expect(performance.now() - t0).toBeLessThan(450);
      confirming = false;
      const t1 = performance.now();
      await (await sender.announce([`wallet:${walletId}`])).applied();
      expect(performance.now() - t1).toBeGreaterThanOrEqual(450);
    } finally {
      await stop();
      await sender.close();
      await Promise.all([listenerDb.close(), oneConnection.close()]);
    }
  });

  it('a listener that never confirms holds the change for the bounded wait, then it is logged', async () => {
    const silentDb = await openPg({ url: pgServer.url, max: 1 });
    const stop = await silentDb.listen(KEY_CHANNEL, () => undefined);
    try {
      const walletId = await makeWallet(pgServer.db);
      const k = await changer.createApiKey(walletId);
      warnings.length = 0;
      const t0 = performance.now();
      expect(await changer.closeKey(k.id)).toBe(true);
      const ms = performance.now() - t0;
      expect(ms).toBeGreaterThanOrEqual(450);
      expect(ms).toBeLessThan(1_500);
      // Other test files share this database and its channels: the silent listener is among those logged.
      const logged = warnings as { keys: string[]; listeners: number[] }[];
      expect(logged.find((w) => w.keys[0] === k.id)?.listeners).toContain(silentDb.listenerPid?.());
      // Its first LISTEN took the presence lock once, so stopping lists it no more (and nothing waits for it).
      const pid = silentDb.listenerPid?.();
      await stop();
      expect(await pgServer.db.listeners?.(KEY_CHANNEL)).not.toContain(pid);
    } finally {
      await stop();
      await silentDb.close();
    }
  });
});
