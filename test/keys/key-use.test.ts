// A key's use is read from the daily rollup, and a capped reserve locks the key itself (its api_keys row), not a
// row any charge writes: capped reserves of one key wait for each other across connections, a charge of the key
// never waits for them, and the standing read after the lock counts a charge committed meanwhile once, as used.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixedClock, koreanMonthDays } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { openPg } from '../../engine/db/pg.ts';
import { createKeyService, type KeyService, lockKeys, readKeyStandings } from '../../engine/keys/index.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { usageRecordStorage } from '../../engine/usage/record-storage.ts';
import { usageRecordRows } from '../../engine/usage/records.ts';
import { openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';

const C = 1000n;
const run = postgresAvailability.ok ? it : it.skip;
const clock = fixedClock('2026-12-15T03:00:00Z');
let pg: TestPostgres;
let dbB: Db;
let keys: KeyService;
let ledger: Ledger;
beforeAll(async () => {
  if (!postgresAvailability.ok) return;
  pg = await openTestPostgres();
  dbB = await openPg({ url: pg.url, max: 4 });
  keys = createKeyService(pg.db, { clock });
  ledger = createLedger(dbB, { clock, owner: 'other' });
  await (await usageRecordStorage(pg.db)).prepare(clock.now());
});
afterAll(async () => {
  await keys?.close();
  await dbB?.close();
  await pg?.cleanup();
});

/** Runs `fn` in a transaction of `db` that stays open until `release` is called. */
function holdOpen(db: Db, fn: (tx: Parameters<Parameters<Db['transaction']>[0]>[0]) => Promise<void>) {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let ready!: () => void;
  const started = new Promise<void>((r) => {
    ready = r;
  });
  const done = db.transaction(async (tx) => {
    await fn(tx);
    ready();
    await released;
  });
  return { started, release, done };
}

run("a key's lock is waited for by another capped reserve's, never by a charge; the read after it counts the charge once", async () => {
  const w = await ledger.createWallet({ credits: 10_000 });
  const k = await keys.createApiKey(w.id, { monthlyLimitCredits: 3000 });
  const auth = await keys.authenticate(k.key, 'api');
  const r = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 500n * C, callId: 'c1', keyId: auth.keyId });
  if (!r.ok) throw new Error('refused');
  const days = koreanMonthDays(clock.now());
  const standing = async (q: Db | Parameters<Parameters<Db['transaction']>[0]>[0]) =>
    (await readKeyStandings(q, [{ keyId: auth.keyId, days }])).get(auth.keyId);
  expect(await standing(pg.db)).toEqual({ usedNano: 0n, heldNano: 500n * C });

  const a = holdOpen(pg.db, (tx) => lockKeys(tx, [auth.keyId]));
  await a.started;
  // Another capped reserve's lock waits for it (here: gives up after 200 ms).
  const blocked = await dbB
    .transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '200ms'`);
      await lockKeys(tx, [auth.keyId]);
    })
    .then(
      () => 'locked',
      (e: { code?: string }) => e.code,
    );
  expect(blocked).toBe('55P03');
  // A charge of the key commits meanwhile: its reservation settled and its rollup row written, nothing of the key locked.
  const draft = {
    requestId: 'req-1',
    walletId: w.id,
    keyId: auth.keyId,
    at: clock.now(),
    door: 'chat',
    model: 'm',
    vendor: 'b',
    route: null,
    fallbackDepth: 0,
    usage: { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0, web_search_calls: 0, file_search_calls: 0 },
    durationMs: 1,
    traceId: null,
    prices: null,
  };
  await ledger.settle(r.reservation, 200n * C, usageRecordRows(draft));
  a.release();
  await a.done;
  // A statement after the lock sees it as used, no longer held.
  const after = holdOpen(pg.db, async (tx) => {
    await lockKeys(tx, [auth.keyId]);
    expect(await standing(tx)).toEqual({ usedNano: 200n * C, heldNano: 0n });
  });
  after.release();
  await after.done;
  expect((await keys.quota.usage([auth.keyId], clock.now())).get(auth.keyId)).toEqual({ dayNano: 200n * C, monthNano: 200n * C });
});
