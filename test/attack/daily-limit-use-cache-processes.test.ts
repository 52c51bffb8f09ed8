// Attack (use-cache.ts, d819fbd): a limited key's day use is kept in memory per process and re-read only in the
// background once a second, so a process does not see what another process charged the key meanwhile. The
// contract lets the daily limit overshoot only by calls sent at the same moment; a call sent after the day's
// use already reached the limit (committed by another process, its answer already given) must be refused.
// Measured on two `npm start` processes sharing PostgreSQL (leases on, the shipped config), a key limited to
// 200,000 credits a day, 32 calls at once spread over both: 256,615 credits used (28% over; HEAD~2 without the
// cache: 206,134), 142 calls admitted that were sent after an earlier answer had shown the limit reached (HEAD~2: 0),
// up to 313 ms after. Two processes calling one after another (one client each): 9 such calls (HEAD~2: 0).
// At fault: engine/keys/quota.ts checkQuota (`uses.get`), engine/keys/use-cache.ts `get` (a figure younger than
// ttlMs is returned as is, whatever other processes committed since).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { openPg } from '../../engine/db/pg.ts';
import { createKeyService, type KeyService } from '../../engine/keys/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { makeWallet } from '../helpers/key-doors.ts';

const C = 1000n; // nano per credit
const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
let pg: TestPostgres;
let dbB: Db;
let a: KeyService; // process A
let b: KeyService; // process B
beforeAll(async () => {
  if (!canRun) return;
  pg = await openTestPostgres({ migrate: true });
  dbB = await openPg({ url: pg.url });
  a = createKeyService(pg.db, { clock: systemClock });
  b = createKeyService(dbB, { clock: systemClock });
}, 60_000);
afterAll(async () => {
  await a?.close?.();
  await b?.close?.();
  await dbB?.close();
  await pg?.cleanup();
});

describe.skipIf(!canRun)('daily key limit across two processes [postgres]', () => {
  it('a call sent after another process charged the day to its limit is refused', async () => {
    const walletId = await makeWallet(pg.db);
    const k = await a.createApiKey(walletId, { name: 'daily', dailyLimitCredits: 10 });
    const onA = await a.authenticate(k.key, 'api');
    const now = new Date();
    // A's first call: the day is unused, admitted (A now keeps the figure).
    await expect(a.quota.checkQuota(onA, 1n * C, now)).resolves.toBeUndefined();
    // B serves the key's next calls, which use the whole day (committed, answers given).
    await b.quota.recordUsage(k.id, 10n * C, now);
    // The day's use has reached its limit: a call sent now, to A, is not one sent at the same moment.
    const e = await a.quota.checkQuota(onA, 1n * C, new Date()).then(
      () => null,
      (err: { status: number; type: string }) => err,
    );
    expect(e, 'admitted on A although the day had reached its limit (B charged it)').toMatchObject({
      status: 429,
      type: 'key_limit_exceeded',
    });
  });
});
