// Attack (wt-attack): usage reported far above the hold is "charged as far as the wallet goes" (docs/api.md,
// docs/money.md). With budget leases and two processes on one wallet, the process charging past its lease
// gives back only its own leases (leases.ts chargePastLease: "Other processes' leases are not asked"): what
// process B's leases hold unspent is not counted, so the charge stops short while the wallet still has that
// money, which goes back to it when B's leases return. The client got vendor work not charged on a wallet that
// could pay for it. Result: held. B's leases were asked back (LISTEN gateway_lease_return) and the charge took
// everything but what B's calls in flight held for themselves, as it would without leases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const WALLET_CREDITS = 500_000; // $0.50
let tree: TempTree;
let pg: TestPostgres;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  if (!canRun) return;
  tree = tempCatalogTree();
  setLeases(tree, true);
  tree.edit('config/billing.yaml', (t) => t.replace(/^ {2}idle_return_ms: \d+/m, '  idle_return_ms: 500'));
  pg = await openTestPostgres({ migrate: false });
  const dirs = { config: tree.config, catalog: tree.catalog };
  a = await startTestGateway({ dirs, credits: WALLET_CREDITS, env: { DATABASE_URL: pg.url } });
  b = await startTestGateway({ dirs, credits: 1, env: { DATABASE_URL: pg.url } });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await pg?.cleanup();
  tree?.remove();
});

// Slow calls through B on several vendors, each leasing a share of A's wallet while they run.
const slow = [
  { model: 'b-6', route: 'b0', path: '/v1/chat/completions', body: { max_completion_tokens: 100 } },
  { model: 'c-flash-2.5', route: 'c0', path: '/v1/chat/completions', body: { max_tokens: 100 } },
  { model: 'd-3-mini', route: 'd0', path: '/v1/chat/completions', body: { max_tokens: 100 } },
  { model: 'e-open-8b', route: 'e0', path: '/v1/chat/completions', body: { max_tokens: 100 } },
  { model: 'a-small-4.5', route: 'a0', path: '/v1/chat/completions', body: { max_tokens: 100 } },
];

describe.skipIf(!canRun)('usage above the hold while another process leases the wallet [postgres]', () => {
  it('is charged as far as the wallet goes, counting what the other process leases unspent', async () => {
    const viaB = { ...b, apiKey: a.apiKey };
    for (const s of slow) b.sim.inject(s.route, { kind: 'delay', ms: 4_000 });
    const inFlight = slow.map((s) =>
      post(viaB, s.path, { model: s.model, messages: [{ role: 'user', content: 'slow' }], ...s.body }).then(async (r) => ({
        status: r.status,
        text: (await r.text()).slice(0, 200),
      })),
    );
    await sleep(1_000);
    const leased = await pg.db.query<{ n: string; amount: string }>(
      `SELECT count(*)::text AS n, coalesce(sum(amount_nano),0)::text AS amount FROM reservations WHERE wallet_id = $1 AND state = 'held' AND call_id LIKE 'lease:%'`,
      [a.walletId],
    );
    // Through A: held for 400 output tokens of b-6 (~$0.012), reported at 30,000 ($0.90): above the whole wallet.
    const res = await post(a, '/v1/chat/completions', {
      model: 'b-6',
      max_completion_tokens: 400,
      messages: [{ role: 'user', content: 'big [[sim:usage input=10 output=30000]]' }],
    });
    expect(res.status).toBe(200);
    const charged = BigInt(res.headers.get('x-service-charged-nano') ?? '-1');
    await res.text();
    const slowDone = await Promise.all(inFlight);
    // B's leases go back once idle.
    const until = Date.now() + 15_000;
    const heldQ = async () =>
      Number(
        (
          await pg.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM reservations WHERE wallet_id = $1 AND state = 'held'`, [
            a.walletId,
          ])
        ).rows[0]!.n,
      );
    while (Date.now() < until && (await heldQ()) > 0) await sleep(200);
    const bal = await a.gw.ledger.balance(a.walletId);
    const rec = await pg.db.query(`SELECT charged_nano::text, output_tokens::text FROM usage_records WHERE wallet_id = $1 ORDER BY seq`, [
      a.walletId,
    ]);
    console.log({
      leasesOfBWhileCharging: leased.rows[0],
      slowDone: slowDone.map((s) => s.status),
      chargedAboveHoldCall: String(charged),
      walletLeftAfterwards: String(bal.availableNano),
      held: await heldQ(),
      records: rec.rows,
    });
    await expectJournalAddsUp(a.gw.db, a.walletId);
    // As far as the wallet goes: nothing is left after a call that cost more than all of it but what B's calls in
    // flight held for themselves then (each at most ~1,000,000 nano: 100 output tokens and its prompt), as
    // without leases. Measured: B's five leases held all $0.50 while A charged; A's charge took 496,137,700 and
    // 3,532,750 came back from B's calls' own holds afterwards. Held.
    expect(bal.availableNano, 'the wallet kept money while the call above its hold was charged short').toBeLessThan(5_000_000n);
  }, 60_000);
});
