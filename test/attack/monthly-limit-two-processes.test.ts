// Attack (wt-attack): a key's monthly limit against a burst through two processes on one wallet (PostgreSQL,
// leases on as shipped). The limit is checked against finished use plus what the key's holds hold in every
// process, so what was admitted (and so charged, each call costing at most its hold here) must not pass it.
// Each call: 400 output tokens of b-6 at most (12,000,000 nano plus its prompt), answered at its full 400.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
let tree: TempTree;
let pg: TestPostgres;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  if (!canRun) return;
  tree = tempCatalogTree();
  setLeases(tree, true);
  pg = await openTestPostgres({ migrate: false });
  const dirs = { config: tree.config, catalog: tree.catalog };
  a = await startTestGateway({ dirs, credits: 10_000_000, env: { DATABASE_URL: pg.url } });
  b = await startTestGateway({ dirs, credits: 1, env: { DATABASE_URL: pg.url } });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await pg?.cleanup();
  tree?.remove();
});

const LIMIT = 100_000; // credits: about eight calls' holds

describe.skipIf(!canRun)('monthly key limit, a burst through two processes [postgres]', () => {
  it('charges no more than the limit', async () => {
    const { key } = await a.gw.keys.createApiKey(a.walletId, { name: 'month', monthlyLimitCredits: LIMIT });
    const body = { model: 'b-6', max_completion_tokens: 400, messages: [{ role: 'user', content: 'go [[sim:long=600]]' }] };
    for (const s of [a, b]) s.sim.inject('b0', { kind: 'delay', ms: 300, times: 40 });
    const calls = Array.from({ length: 40 }, (_, i) => post({ ...(i % 2 ? b : a), apiKey: key }, '/v1/chat/completions', body));
    const res = await Promise.all(calls);
    const statuses = res.map((r) => r.status);
    const charged = res.reduce((s, r) => s + BigInt(r.headers.get('x-service-charged-nano') ?? '0'), 0n);
    await Promise.all(res.map((r) => r.text()));
    await a.gw.leases.flushed();
    await b.gw.leases.flushed();
    const used = await pg.db.query<{ s: string }>(
      `SELECT coalesce(sum(charged_nano),0)::text AS s FROM usage_records WHERE key_id IS NOT NULL AND wallet_id = $1`,
      [a.walletId],
    );
    console.log({
      served: statuses.filter((s) => s === 200).length,
      refused: statuses.filter((s) => s === 429).length,
      other: statuses.filter((s) => s !== 200 && s !== 429),
      charged: String(charged),
      records: used.rows[0]!.s,
    });
    expect(BigInt(used.rows[0]!.s)).toBeLessThanOrEqual(BigInt(LIMIT) * 1000n);
  }, 60_000);
});
