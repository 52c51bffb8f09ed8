// The gateway SIGKILLed under load on PostgreSQL: the holds of its calls in flight stay behind. A gateway
// started again on the same database sweeps them once they expire: nothing stays held, nothing is charged
// twice, and the journal still adds up to the balances. What a kill can lose is bounded: the calls that
// were answered but whose settle had not been written yet; the test measures it and prints it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { journalSum } from '../helpers/ledger.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const CALLS = 40;
const TTL_MS = 2_000;

let pgSchema: TestPostgres;
let sim: Simulator;
let ledger: Ledger;
let walletId: string;
let apiKey: string;
const children: ChildGateway[] = [];

beforeAll(async () => {
  if (!canRun) return;
  pgSchema = await openTestPostgres();
  sim = await startSimulator({ streamChunkDelayMs: 10 });
  ledger = createLedger(pgSchema.db, { clock: systemClock });
  walletId = (await ledger.createWallet({ credits: 10_000_000 })).id;
  const keys = createKeyService(pgSchema.db, { clock: systemClock });
  apiKey = (await keys.createApiKey(walletId, { name: 'load' })).key;
  await keys.close();
}, 60_000);

afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await pgSchema?.cleanup();
});

function gatewayOnTheDatabase(): Promise<ChildGateway> {
  const env: Record<string, string> = { DATABASE_URL: pgSchema.url, GATEWAY_SIMULATE: '0', LOG_LEVEL: 'warn' };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  return startChildGateway(env, {
    apiKey,
    prepare: (tree) => {
      // Holds of one call each (leases off, as for wallets too small to lease): the test reads them one by one.
      // The shipped path with leases is killed in test/chaos/kill-charged*.
      setLeases(tree, false);
      tree.edit('config/limits.yaml', (t) =>
        t
          .replace(/^reservation_ttl_ms: \d+/m, `reservation_ttl_ms: ${TTL_MS}`)
          .replace(/^sweep_interval_ms: \d+/m, 'sweep_interval_ms: 200'),
      );
    },
  }).then((c) => (children.push(c), c));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it.skipIf(!canRun)(
  'after a SIGKILL under load and a restart, nothing stays held and nothing is charged twice',
  async () => {
    const first = await gatewayOnTheDatabase();
    let completed = 0;
    const calls = Array.from({ length: CALLS }, (_, i) =>
      fetch(`${first.base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'b-5',
          stream: true,
          messages: [{ role: 'user', content: `call ${i} [[sim:long=${20 + i * 3}]]` }],
          max_completion_tokens: 1000,
        }),
      })
        .then(async (r) => {
          if ((await r.text()).includes('[DONE]')) completed++;
        })
        .catch(() => undefined),
    );
    await sleep(600);
    first.child.kill('SIGKILL');
    await Promise.all(calls);
    await first.exited;

    const heldAtKill = (await ledger.balance(walletId)).reservedNano;
    expect(heldAtKill > 0n, 'the kill left no hold behind: the load did not reach it').toBe(true);

    const second = await gatewayOnTheDatabase();
    let bal = await ledger.balance(walletId);
    for (let i = 0; i < 100 && bal.reservedNano !== 0n; i++) {
      await sleep(100);
      bal = await ledger.balance(walletId);
    }
    expect(bal.reservedNano, 'a hold stayed after expiry and the sweep').toBe(0n);
    const journal = await journalSum(pgSchema.db, walletId);
    expect(journal.availableNano).toBe(bal.availableNano);
    expect(journal.reservedNano).toBe(0n);

    // Charged at most once, released at most once: each reservation's journal settle rows add up to the one charge it
    // records, and its release rows never give back more than it held.
    const finishes = await pgSchema.db.query<{ id: string; charged: string | null; reserved: string; settled: string; released: string }>(
      `SELECT r.id, r.charged_nano AS charged,
            coalesce(sum(j.amount_nano) FILTER (WHERE j.kind = 'reserve'), 0) AS reserved,
            coalesce(sum(j.amount_nano) FILTER (WHERE j.kind = 'settle'), 0) AS settled,
            coalesce(sum(j.amount_nano) FILTER (WHERE j.kind = 'release'), 0) AS released
       FROM reservations r LEFT JOIN ledger_journal j ON j.reservation_id = r.id
      WHERE r.wallet_id = $1 GROUP BY r.id`,
      [walletId],
    );
    expect(finishes.rows.length).toBe(CALLS);
    for (const f of finishes.rows) {
      expect(BigInt(f.settled), `reservation ${f.id}: journal settle rows differ from its charge`).toBe(BigInt(f.charged ?? 0));
      expect(BigInt(f.released) <= BigInt(f.reserved), `reservation ${f.id} released more than it held`).toBe(true);
    }
    const states = await pgSchema.db.query<{ state: string; n: string }>(
      `SELECT state, count(*) AS n FROM reservations WHERE wallet_id = $1 GROUP BY state`,
      [walletId],
    );
    const byState = Object.fromEntries(states.rows.map((r) => [r.state, Number(r.n)]));
    expect(byState.held ?? 0).toBe(0);
    // The bound: answers completed before the kill whose settle never landed (settled ones are charged).
    const lost = Math.max(0, completed - (byState.settled ?? 0));
    console.log(
      `SIGKILL under load: ${CALLS} calls, ${completed} completed, states ${JSON.stringify(byState)}, answered but uncharged: ${lost}`,
    );
    expect(second.child.exitCode).toBeNull();
  },
  90_000,
);
