// Budget leases across real gateway processes on one PostgreSQL: never overspent, fresh after a top-up,
// money in another process's lease still serves a call it can pay, SIGTERM writes every charge, and after a
// SIGKILL the restarted gateway leaves nothing held and nothing charged twice, with what was lost measured.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { VENDORS } from '../../engine/core/types.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { startSimulator, type Simulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { leasesOn } from '../helpers/leased-gateway.ts';
import { startChildGateway, type ChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const ADMIN = 'lease-admin-token';
/** tts-1: $15 per 1M characters; 1,000 characters cost 15,000,000 nano, fixed before the call (hold = charge). */
const SPEECH_COST = 15_000_000n;
const speechBody = JSON.stringify({ model: 'tts-1', input: 'x'.repeat(1000), voice: 'alloy' });

let pgSchema: TestPostgres;
let sim: Simulator;
let ledger: Ledger;
const children: ChildGateway[] = [];

beforeAll(async () => {
  if (!canRun) return;
  pgSchema = await openTestPostgres();
  sim = await startSimulator({ streamChunkDelayMs: 5 });
  ledger = createLedger(pgSchema.db, { clock: systemClock });
}, 60_000);

afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await pgSchema?.cleanup();
});

async function walletWithKey(nano: bigint): Promise<{ walletId: string; key: string }> {
  const w = await ledger.createWallet();
  await ledger.topUp(w.id, { nano });
  const keys = createKeyService(pgSchema.db, { clock: systemClock });
  const { key } = await keys.createApiKey(w.id, { name: 'load' });
  await keys.close();
  return { walletId: w.id, key };
}

const CALL_GAP_MS = 5;
// A batch's write on a loaded machine. At 50 ms CI failed once (21 lost against a bound of 20); ten runs of
// this test alone on the 2-core machine lost 0 to 27 of 50 to 100 answered, before and after the wallets'
// queues were shared. The bound (40 here) still fails by far when draws are never written or wait ten flush
// windows (98 lost).
const WRITE_ALLOWANCE_MS = 150;
/** billing.yaml's `leases.flush_ms` as shipped (the tests' gateways run with it). */
const shippedFlushMs = (): number => Number(/^ {2}flush_ms: (\d+)/m.exec(readFileSync(join(import.meta.dirname, '../../config/billing.yaml'), 'utf8'))?.[1] ?? NaN);

function gateway(apiKey: string, opts: { ttlMs?: number } = {}): Promise<ChildGateway> {
  const env: Record<string, string> = { DATABASE_URL: pgSchema.url, GATEWAY_SIMULATE: '0', LOG_LEVEL: 'warn', GATEWAY_ADMIN_TOKEN: ADMIN };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  return startChildGateway(env, {
    apiKey,
    prepare: (tree) => {
      tree.edit('config/billing.yaml', (y) =>
        leasesOn(y)
          .replace(/^  min_slice_credits: \d+/m, '  min_slice_credits: 1')
          .replace(/^  max_share: [\d.]+/m, '  max_share: 0.5')
          .replace(/^  ttl_ms: \d+/m, `  ttl_ms: ${opts.ttlMs ?? 60_000}`),
      );
      tree.edit('config/limits.yaml', (t) => {
        const swept = t.replace(/^sweep_interval_ms: \d+/m, 'sweep_interval_ms: 200');
        // Calls on the exact path hold for the reservation TTL: as short as the leases' when asked.
        return opts.ttlMs ? swept.replace(/^reservation_ttl_ms: \d+/m, `reservation_ttl_ms: ${opts.ttlMs}`) : swept;
      });
    },
  }).then((c) => (children.push(c), c));
}

const speech = (g: ChildGateway, key: string) =>
  fetch(`${g.base}/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: speechBody })
    .then(async (r) => ({ status: r.status, charged: r.headers.get('x-service-charged-nano'), bytes: (await r.arrayBuffer()).byteLength }))
    .catch(() => ({ status: 0, charged: null, bytes: 0 }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function settledBalance(walletId: string) {
  let bal = await ledger.balance(walletId);
  for (let i = 0; i < 200 && bal.reservedNano !== 0n; i++) {
    await sleep(50);
    bal = await ledger.balance(walletId);
  }
  return bal;
}

describe.skipIf(!canRun)('budget leases across processes', () => {
  let a: ChildGateway;
  let b: ChildGateway;
  let walletId: string;
  let key: string;

  beforeAll(async () => {
    ({ walletId, key } = await walletWithKey(20n * SPEECH_COST));
    [a, b] = await Promise.all([gateway(key), gateway(key)]);
  }, 90_000);

  it('a wallet that covers exactly 20 calls serves exactly 20 of 40 sent to two processes, most of them at once', async () => {
    // One call on each process first: each asks for a lease, which the burst then rides.
    const warm = await Promise.all([speech(a, key), speech(b, key)]);
    for (let i = 0; i < 40; i++) {
      const held = await pgSchema.db.query<{ n: string }>(`SELECT count(*) AS n FROM reservations WHERE wallet_id = $1 AND call_id LIKE 'lease:%'`, [walletId]);
      if (Number(held.rows[0].n) > 0) break;
      await sleep(25);
    }
    const burst = await Promise.all(Array.from({ length: 38 }, (_, i) => speech(i % 2 ? a : b, key)));
    const results = [...warm, ...burst];
    const ok = results.filter((r) => r.status === 200);
    expect(results.filter((r) => r.status !== 200 && r.status !== 402)).toEqual([]);
    expect(ok.length).toBe(20);
    for (const r of ok) expect(r.charged).toBe(String(SPEECH_COST));
    const leases = await pgSchema.db.query<{ n: string }>(`SELECT count(*) AS n FROM reservations WHERE wallet_id = $1 AND call_id LIKE 'lease:%'`, [walletId]);
    expect(Number(leases.rows[0].n), 'no lease was taken: the test did not exercise them').toBeGreaterThan(0);
    // Both processes write their draws and give their leases back on request.
    await Promise.all([a, b].map((g) => fetch(`${g.base}/healthz`)));
    const bal = await settledBalance(walletId);
    expect(bal.availableNano).toBe(0n);
    await expectJournalAddsUp(ledger, walletId);
  }, 60_000);

  it('a top-up through the admin API is spendable on the next call in the other process', async () => {
    const top = await fetch(`${a.base}/admin/v1/wallets/${walletId}/credits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ credits: 15_000 }), // one call
    });
    expect(top.status).toBe(201);
    expect((await speech(b, key)).status).toBe(200);
  });

  it("a wallet whose balance sits in another process's lease still serves a call it can pay", async () => {
    const fresh = await walletWithKey(40n * SPEECH_COST);
    const [c, d] = await Promise.all([gateway(fresh.key), gateway(fresh.key)]);
    // c takes leases of the wallet by calling twice; the second call rides its lease.
    expect((await speech(c, fresh.key)).status).toBe(200);
    await sleep(200);
    expect((await speech(c, fresh.key)).status).toBe(200);
    const held = await pgSchema.db.query<{ s: string }>(
      `SELECT coalesce(sum(amount_nano), 0)::text AS s FROM reservations WHERE wallet_id = $1 AND state = 'held' AND call_id LIKE 'lease:%'`,
      [fresh.walletId],
    );
    expect(BigInt(held.rows[0].s)).toBeGreaterThan(0n);
    // d spends everything left: the last calls need the money c's lease holds.
    let served = 0;
    for (let i = 0; i < 38; i++) if ((await speech(d, fresh.key)).status === 200) served++;
    expect(served).toBe(38);
    expect((await speech(d, fresh.key)).status).toBe(402);
    const bal = await settledBalance(fresh.walletId);
    expect(bal.availableNano).toBe(0n);
    await expectJournalAddsUp(ledger, fresh.walletId);
  }, 60_000);
});

describe.skipIf(!canRun)('stopping a gateway that holds leases', () => {
  it('SIGTERM under load: every answered call is charged exactly once and the leases come back', async () => {
    const { walletId, key } = await walletWithKey(10_000n * SPEECH_COST);
    const g = await gateway(key);
    const before = (await ledger.balance(walletId)).availableNano;
    const calls = Array.from({ length: 60 }, () => speech(g, key));
    await sleep(150);
    g.child.kill('SIGTERM');
    const results = await Promise.all(calls);
    expect(await g.exited).toBe(0);
    const answered = results.filter((r) => r.status === 200 && r.bytes > 0).length;
    const bal = await ledger.balance(walletId);
    expect(bal.reservedNano, 'a lease or a hold stayed').toBe(0n);
    expect(before - bal.availableNano).toBe(BigInt(answered) * SPEECH_COST);
    await expectJournalAddsUp(ledger, walletId);
  }, 60_000);

  it('SIGKILL under load: after restart and lease expiry nothing is held or charged twice; what was lost is measured', async () => {
    const { walletId, key } = await walletWithKey(10_000n * SPEECH_COST);
    const g = await gateway(key, { ttlMs: 2_000 });
    const before = (await ledger.balance(walletId)).availableNano;
    let answered = 0;
    const warm = await speech(g, key); // the first call asks for a lease; the load rides it
    if (warm.status === 200) answered++;
    await sleep(100);
    const calls = Array.from({ length: 200 }, (_, i) =>
      sleep(i * CALL_GAP_MS).then(async () => {
        const r = await speech(g, key);
        if (r.status === 200 && r.bytes > 0) answered++;
      }),
    );
    await sleep(500);
    g.child.kill('SIGKILL');
    await Promise.all(calls);
    await g.exited;
    const again = await gateway(key, { ttlMs: 2_000 });
    const bal = await settledBalance(walletId);
    expect(bal.reservedNano, 'a lease stayed held after expiry').toBe(0n);
    await expectJournalAddsUp(ledger, walletId);
    const charged = before - bal.availableNano;
    expect(charged % SPEECH_COST).toBe(0n);
    const chargedCalls = Number(charged / SPEECH_COST);
    expect(chargedCalls).toBeLessThanOrEqual(answered); // never charged twice, never for a call not answered
    expect(answered).toBeGreaterThan(20);
    const lost = answered - chargedCalls;
    console.log(`SIGKILL with leases: ${answered} answered, ${chargedCalls} charged, ${lost} answered but lost with the process`);
    // The bound (README "Budget leases"): only draws not yet committed are lost, those of the calls answered
    // in the last flush_ms (draws wait that long to share a batch) and while that batch was being written.
    // Calls arrive every CALL_GAP_MS; a batch's write is allowed WRITE_ALLOWANCE_MS on a loaded machine. Draws
    // never written at all would lose every answered call, far past this.
    expect(lost).toBeLessThanOrEqual(Math.ceil((shippedFlushMs() + WRITE_ALLOWANCE_MS) / CALL_GAP_MS));
    expect(again.child.exitCode).toBeNull();
  }, 60_000);
});
