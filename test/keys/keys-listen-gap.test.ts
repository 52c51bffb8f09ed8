// Issue 26: notifications sent while a process's LISTEN connection was down are lost, so on its reconnect every
// cache they feed is flushed: a key closed meanwhile is refused as soon as the listener is back (not once the
// 30 s key cache expires), and a lost request to give a wallet's leases back is answered by giving back all.

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { openPg } from '../../engine/db/pg.ts';
import { createKeyService, type KeyService } from '../../engine/keys/index.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import { gatewayLeases, LEASE_RETURN_CHANNEL, type LeaseConfig } from '../../engine/money/lease-wiring.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { HoldRenewals } from '../../engine/money/renewals.ts';
import { noRows } from '../helpers/budget-leases.ts';
import { openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';
import { makeWallet } from '../helpers/key-doors.ts';

async function until(ms: number, probe: () => boolean | Promise<boolean>): Promise<number> {
  const start = Date.now();
  while (!(await probe())) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - start;
}

/** Ends the listening connection of the Db opened with this application_name. */
async function dropListener(db: Db, appName: string): Promise<void> {
  const killed = await db.query<{ k: boolean }>(
    // The listening connection is the one holding the listeners' advisory locks (engine/db/pg.ts).
    `SELECT pg_terminate_backend(a.pid) AS k FROM pg_stat_activity a
      WHERE a.application_name = $1 AND a.pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = 1280595022::oid)`,
    [appName],
  );
  expect(killed.rows).toEqual([{ k: true }]);
}

const withAppName = (url: string, appName: string) => {
  const u = new URL(url);
  u.searchParams.set('application_name', appName);
  return u.toString();
};

describe.skipIf(!postgresAvailability.ok)('a LISTEN reconnect flushes the key cache', () => {
  let pgServer: TestPostgres;
  let watcherDb: Db;
  let watcher: KeyService;
  let closer: KeyService;
  // Its own application_name, so the test ends this listener and no other test's.
  const appName = `listen-gap-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    pgServer = await openTestPostgres();
    watcherDb = await openPg({ url: withAppName(pgServer.url, appName), max: 4 });
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

    await dropListener(pgServer.db, appName);
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

describe.skipIf(!postgresAvailability.ok)('a LISTEN reconnect gives the budget leases back', () => {
  it('answers a request to give leases back that was lost while the listener was down', async () => {
    const pgServer = await openTestPostgres();
    const appName = `listen-gap-leases-${randomBytes(4).toString('hex')}`;
    const holderDb = await openPg({ url: withAppName(pgServer.url, appName), max: 4 });
    const quiet = { warn: () => undefined, error: () => undefined };
    // Idle leases go back after 10 minutes here: only the reconnect can make this one go back within the test.
    const config: LeaseConfig = {
      enabled: true,
      slice_seconds: 10,
      min_slice_credits: 1_000,
      max_share: 0.5,
      ttl_ms: 600_000,
      idle_return_ms: 600_000,
    };
    const ledger = createLedger(holderDb, { clock: systemClock, owner: 'listen-gap-leases' });
    const renewals = new HoldRenewals(ledger, () => systemClock.now(), quiet);
    const leases = gatewayLeases(holderDb, ledger, systemClock, () => config, quiet, new ChargeWriter(() => quiet), renewals);
    try {
      await leases.listen();
      const w = await ledger.createWallet({ credits: 10_000 });
      const hold = await leases.book.holdOrWait(w.id, 'b', 100_000n);
      expect(hold, 'the call was not leased').not.toBeNull();
      await leases.book.charge(hold!, 40_000n, 'gap-draw', noRows()).committed;
      expect((await ledger.balance(w.id)).reservedNano).toBeGreaterThan(0n); // the lease stays held

      await dropListener(pgServer.db, appName);
      await until(5_000, () => holderDb.seemsReachable?.() === false);
      await pgServer.db.notify(LEASE_RETURN_CHANNEL, w.id); // another process short of the wallet's money: lost
      await until(10_000, () => holderDb.seemsReachable?.() === true);
      await until(5_000, async () => (await ledger.balance(w.id)).reservedNano === 0n);
      expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 10_000_000n - 40_000n, reservedNano: 0n });
    } finally {
      await leases.book.close(5_000);
      await holderDb.close();
      await pgServer.cleanup();
    }
  }, 30_000);
});
