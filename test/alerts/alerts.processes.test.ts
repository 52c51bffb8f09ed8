// Two gateway processes on one PostgreSQL drain one wallet across a balance threshold together, 50 calls at once
// split between them: the crossing is recorded by a conditional write in the shared database, so exactly one
// process fires it and the owner's receiver gets exactly one event. A top-up through one process and another
// drain through both: exactly one more.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertBalance } from '../../engine/alert-wiring.ts';
import { verifySignature } from '../../engine/alerts/signature.ts';
import { AlertWatcher } from '../../engine/alerts/watcher.ts';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';
import { doors, type Receiver, sleep, startReceiver } from './receiver.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const ADMIN = 'alerts-admin-token';
const CREDITS = 1_000_000;

let pgSchema: TestPostgres;
let sim: Simulator;
let rx: Receiver;
let a: ChildGateway;
let b: ChildGateway;
let walletId: string;
let apiKey: string;
let managementKey: string;

function gateway(): Promise<ChildGateway> {
  const env: Record<string, string> = {
    DATABASE_URL: pgSchema.url,
    GATEWAY_SIMULATE: '0',
    LOG_LEVEL: 'warn',
    GATEWAY_ADMIN_TOKEN: ADMIN,
    GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1',
  };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  return startChildGateway(env, { apiKey });
}

const drain = (g: ChildGateway, i: number) =>
  fetch(`${g.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'b-4.1-mini',
      max_tokens: 10_000,
      messages: [{ role: 'user', content: `drain ${i} [[sim:usage output=10000]]` }],
    }),
  }).then(async (r) => (await r.text(), r.status));

/** 50 calls at once, every other one to each process. */
const burst = (from: number) => Promise.all(Array.from({ length: 50 }, (_, i) => drain(i % 2 === 0 ? a : b, from + i)));

/** Waits until the receiver holds `n` deliveries, then a while longer in which no more may come. */
async function exactly(n: number) {
  await rx.waitFor(n, 20_000);
  await sleep(2_500);
  return rx.received;
}

beforeAll(async () => {
  if (!canRun) return;
  pgSchema = await openTestPostgres({ migrate: true });
  sim = await startSimulator();
  rx = await startReceiver();
  const ledger = createLedger(pgSchema.db, { clock: systemClock });
  walletId = (await ledger.createWallet({ credits: CREDITS })).id;
  const keys = createKeyService(pgSchema.db, { clock: systemClock });
  managementKey = (await keys.createManagementKey(walletId, 'ops')).key;
  apiKey = (await keys.createApiKey(walletId, { name: 'drain' })).key;
  await keys.close();
  [a, b] = await Promise.all([gateway(), gateway()]);
}, 120_000);

afterAll(async () => {
  a?.remove();
  b?.remove();
  await rx?.close();
  await sim?.close();
  await pgSchema?.cleanup();
});

describe.runIf(canRun)('a threshold crossed by two processes together [postgres]', () => {
  let secret: string;

  it('one event for the crossing', async () => {
    const api = doors(a.base, managementKey);
    const made = await api.createWebhook({ url: rx.url, events: ['balance.threshold_crossed'] });
    expect(made.status).toBe(201);
    secret = made.json.secret;
    expect((await doors(b.base, managementKey).setAlerts({ balance_percent_of_last_top_up: [50], balance_credits: [] })).status).toBe(200);
    await sleep(5_500); // each process's cached view of the wallet's subscriptions lasts CHECK_POLICY.configTtlMs

    const statuses = await burst(0);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(32);
    const got = await exactly(1);
    expect(got).toHaveLength(1);
    expect(got[0]!.json.type).toBe('balance.threshold_crossed');
    expect(verifySignature(secret, String(got[0]!.headers['x-gateway-signature']), got[0]!.body, Math.floor(Date.now() / 1000))).toBe(true);
  }, 90_000);

  it('after a top-up through one process, a drain through both: exactly one more', async () => {
    const top = await fetch(`${b.base}/admin/v1/wallets/${walletId}/credits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ credits: CREDITS }),
    });
    expect(top.status).toBe(201);
    await sleep(500);
    for (let round = 0; round < 3 && rx.received.length < 2; round++) {
      await burst(100 + round * 50);
      await sleep(1_500);
    }
    const got = await exactly(2);
    expect(got).toHaveLength(2);
    expect(got[1]!.json.id).not.toBe(got[0]!.json.id);
    const rows = await pgSchema.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE wallet_id = $1`, [walletId]);
    expect(Number(rows.rows[0]!.n)).toBe(2);
  }, 120_000);

  it('two watchers racing on one wallet below its threshold: one event, however many checks', async () => {
    const ledger = createLedger(pgSchema.db, { clock: systemClock });
    const w = (await ledger.createWallet({ credits: 1_000 })).id;
    await pgSchema.db.query(
      `INSERT INTO webhooks (id, wallet_id, url, events, secret, created_at) VALUES ($1, $2, $3, '{balance.threshold_crossed}', 'whsec_x', now())`,
      [`wh_${w}`, w, rx.url],
    );
    // 1,000 credits is at or below 1,000,000 credits from the start: every check sees it crossed.
    await pgSchema.db.query(
      `INSERT INTO alert_settings (wallet_id, balance_percents, balance_credits, key_monthly_percents, key_daily_percents, updated_at) VALUES ($1, '{}', '{1000000}', '{}', '{}', now())`,
      [w],
    );
    const watcher = () =>
      new AlertWatcher({
        db: pgSchema.db,
        clock: systemClock,
        log: () => ({ error: () => {} }),
        queued: () => {},
        balanceOf: alertBalance,
      });
    const [one, two] = [watcher(), watcher()];
    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? one : two).check(w, [])));
    const rows = await pgSchema.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE wallet_id = $1`, [w]);
    expect(Number(rows.rows[0]!.n)).toBe(1);
    const queued = await pgSchema.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1`, [
      `wh_${w}`,
    ]);
    expect(Number(queued.rows[0]!.n)).toBe(1);
  }, 30_000);
});
