// Attack (use-cache.ts, d819fbd), end to end: two gateways on one PostgreSQL (as two `npm start` processes, or
// the workers of GATEWAY_WORKERS=2), budget leases on as shipped, a key limited to 50,000 credits a day, one client
// calling one after another, each call to the other gateway. Each gateway counts only its own charges until its
// figure of the key's day is re-read (in the background, once a second), so both admit calls after the day's use
// reached its limit. The contract lets the daily limit overshoot only by calls sent at the same moment.
// Measured with `npm start` (GATEWAY_WORKERS=2, one client one call at a time, 324-credit calls, 20,000 limit):
// 16 calls admitted after the limit was reached, 25,565 credits used. HEAD~2 (a read per check): none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
let tree: TempTree;
let pg: TestPostgres;
let one: TestGateway;
let two: TestGateway;
beforeAll(async () => {
  if (!canRun) return;
  tree = tempCatalogTree();
  setLeases(tree, true);
  pg = await openTestPostgres({ migrate: false });
  const opts = { dirs: { config: tree.config, catalog: tree.catalog }, credits: 10_000_000, env: { DATABASE_URL: pg.url } };
  one = await startTestGateway(opts);
  two = await startTestGateway(opts);
}, 60_000);
afterAll(async () => {
  await one?.close();
  await two?.close();
  await pg?.cleanup();
  tree?.remove();
});

const LIMIT_CREDITS = 50_000;
const body = { model: 'b-5', max_completion_tokens: 400, messages: [{ role: 'user', content: `${'x'.repeat(4000)} [[sim:long=300]]` }] };

describe.skipIf(!canRun)('daily key limit, two gateways on one database, leases on [postgres]', () => {
  it('a client calling one after another, alternating gateways, is refused once the day used its limit', async () => {
    const { key } = await one.gw.keys.createApiKey(one.walletId, { name: 'daily', dailyLimitCredits: LIMIT_CREDITS });
    const limitNano = BigInt(LIMIT_CREDITS) * 1000n;
    let used = 0n;
    const admittedPast: number[] = [];
    for (let i = 0; i < 24; i++) {
      const t = i % 2 === 0 ? one : two;
      const res = await post({ ...t, apiKey: key }, '/v1/chat/completions', body);
      const text = await res.text();
      if (res.status === 429) continue;
      expect(res.status, text).toBe(200);
      if (used >= limitNano) admittedPast.push(i + 1);
      used += BigInt(res.headers.get('x-service-charged-nano') ?? '0');
    }
    expect(used).toBeGreaterThanOrEqual(limitNano);
    expect(
      admittedPast,
      `calls admitted after the day's use (answered, charged) had reached its limit; ${used} nano used of ${limitNano}`,
    ).toEqual([]);
  });
});
