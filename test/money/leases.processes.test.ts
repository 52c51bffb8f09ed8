// Budget leases across real gateway processes on one PostgreSQL: never overspent, fresh after a top-up,
// money in another process's lease still serves a call it can pay, SIGTERM writes every charge, and after a
// SIGKILL the restarted gateway leaves nothing held and nothing charged twice, with what was lost measured.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { leasesOn } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { vendorsAtSimulator } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

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

// How many calls are lost with a SIGKILL depends on how long the last batch of draws took to write: on a loaded
// machine a count bound failed CI (72 lost against 40, once a batch's write stalled). What the design promises
// does not depend on load: only calls that drew after the newest draw written are lost (the test checks that,
// by request id); draws.test.ts checks that draws wait no longer than flush_ms.
const CALL_GAP_MS = 5;
const KILL_AFTER_ANSWERED = 40;

function gateway(apiKey: string, opts: { ttlMs?: number } = {}): Promise<ChildGateway> {
  const env: Record<string, string> = {
    DATABASE_URL: pgSchema.url,
    GATEWAY_SIMULATE: '0',
    LOG_LEVEL: 'warn',
    GATEWAY_ADMIN_TOKEN: ADMIN,
    ...vendorsAtSimulator(sim),
  };
  return startChildGateway(env, {
    apiKey,
    prepare: (tree) => {
      tree.edit('config/billing.yaml', (y) =>
        leasesOn(y)
          .replace(/^ {2}min_slice_credits: \d+/m, '  min_slice_credits: 1')
          .replace(/^ {2}max_share: [\d.]+/m, '  max_share: 0.5')
          .replace(/^ {2}ttl_ms: \d+/m, `  ttl_ms: ${opts.ttlMs ?? 60_000}`),
      );
      tree.edit('config/limits.yaml', (t) => {
        const swept = t.replace(/^sweep_interval_ms: \d+/m, 'sweep_interval_ms: 200');
        // Calls on the exact path hold for the reservation TTL: as short as the leases' when asked.
        return opts.ttlMs ? swept.replace(/^reservation_ttl_ms: \d+/m, `reservation_ttl_ms: ${opts.ttlMs}`) : swept;
      });
    },
  }).then((c) => (children.push(c), c));
}

const speech = (g: ChildGateway, key: string, requestId?: string) =>
  fetch(`${g.base}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(requestId ? { 'x-request-id': requestId } : {}) },
    body: speechBody,
  })
    .then(async (r) => {
      const headAt = Date.now();
      return { status: r.status, charged: r.headers.get('x-service-charged-nano'), bytes: (await r.arrayBuffer()).byteLength, headAt };
    })
    .catch(() => ({ status: 0, charged: null, bytes: 0, headAt: 0 }));

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
      const held = await pgSchema.db.query<{ n: string }>(
        `SELECT count(*) AS n FROM reservations WHERE wallet_id = $1 AND call_id LIKE 'lease:%'`,
        [walletId],
      );
      if (Number(held.rows[0]!.n) > 0) break;
      await sleep(25);
    }
    const burst = await Promise.all(Array.from({ length: 38 }, (_, i) => speech(i % 2 ? a : b, key)));
    const results = [...warm, ...burst];
    const ok = results.filter((r) => r.status === 200);
    expect(results.filter((r) => r.status !== 200 && r.status !== 402)).toEqual([]);
    expect(ok.length).toBe(20);
    for (const r of ok) expect(r.charged).toBe(String(SPEECH_COST));
    const leases = await pgSchema.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM reservations WHERE wallet_id = $1 AND call_id LIKE 'lease:%'`,
      [walletId],
    );
    expect(Number(leases.rows[0]!.n), 'no lease was taken: the test did not exercise them').toBeGreaterThan(0);
    // Both processes write their draws and give their leases back on request.
    await Promise.all([a, b].map((g) => fetch(`${g.base}/healthz`)));
    const bal = await settledBalance(walletId);
    expect(bal.availableNano).toBe(0n);
    await expectJournalAddsUp(pgSchema.db, walletId);
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

  it('a monthly limit shared by two processes is never passed by their calls together, each process leasing the allowance', async () => {
    const MAX_CALLS = 12;
    const rich = await walletWithKey(1_000n * SPEECH_COST);
    const keys = createKeyService(pgSchema.db, { clock: systemClock });
    const limited = await keys.createApiKey(rich.walletId, {
      name: 'monthly',
      monthlyLimitCredits: Number((BigInt(MAX_CALLS) * SPEECH_COST) / 1000n),
    });
    await keys.close();
    const [c, d] = await Promise.all([gateway(rich.key), gateway(rich.key)]);
    // Each process takes a lease of the key's allowance with its first call; the bursts then ride them.
    const warm = await Promise.all([speech(c, limited.key), speech(d, limited.key)]);
    await sleep(200);
    const results = [...warm];
    for (let round = 0; round < 3; round++)
      results.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => speech(i % 2 ? c : d, limited.key)))));
    const ok = results.filter((r) => r.status === 200);
    expect(results.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
    expect(ok.length).toBe(MAX_CALLS);
    const keyLeases = await pgSchema.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM reservations WHERE key_id = $1 AND call_id LIKE 'lease:%'`,
      [limited.id],
    );
    expect(Number(keyLeases.rows[0]!.n), "no lease of the key's allowance was taken: the test did not exercise them").toBeGreaterThan(0);
    const used = await pgSchema.db.query<{ s: string }>(
      `SELECT coalesce(sum(charged_nano), 0)::text AS s FROM usage_daily WHERE key_id = $1`,
      [limited.id],
    );
    expect(BigInt(used.rows[0]!.s)).toBe(BigInt(MAX_CALLS) * SPEECH_COST);
    await settledBalance(rich.walletId);
    await expectJournalAddsUp(pgSchema.db, rich.walletId);
  }, 60_000);

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
    expect(BigInt(held.rows[0]!.s)).toBeGreaterThan(0n);
    // d spends everything left: the last calls need the money c's lease holds.
    let served = 0;
    for (let i = 0; i < 38; i++) if ((await speech(d, fresh.key)).status === 200) served++;
    expect(served).toBe(38);
    expect((await speech(d, fresh.key)).status).toBe(402);
    const bal = await settledBalance(fresh.walletId);
    expect(bal.availableNano).toBe(0n);
    await expectJournalAddsUp(pgSchema.db, fresh.walletId);
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
    await expectJournalAddsUp(pgSchema.db, walletId);
  }, 60_000);

  it('SIGKILL under load: after restart and lease expiry nothing is held or charged twice, and every answered call is charged', async () => {
    const { walletId, key } = await walletWithKey(10_000n * SPEECH_COST);
    const g = await gateway(key, { ttlMs: 2_000 });
    const before = (await ledger.balance(walletId)).availableNano;
    /** Answered calls by request id: when the client had the answer's head (ms, this machine's clock). */
    const answeredAt = new Map<string, number>();
    const call = async (requestId: string) => {
      const r = await speech(g, key, requestId);
      if (r.status === 200 && r.bytes > 0) answeredAt.set(requestId, r.headAt);
    };
    await call('kill-warm'); // the first call asks for a lease; the load rides it
    await sleep(100);
    const calls = Array.from({ length: 200 }, (_, i) => sleep(i * CALL_GAP_MS).then(() => call(`kill-${i}`)));
    // Killed once enough calls were answered, whatever the machine's speed, with the rest still arriving.
    for (let waited = 0; answeredAt.size < KILL_AFTER_ANSWERED && waited < 10_000; waited += 10) await sleep(10);
    g.child.kill('SIGKILL');
    const killedAt = Date.now();
    await Promise.all(calls);
    await g.exited;
    const again = await gateway(key, { ttlMs: 2_000 });
    const bal = await settledBalance(walletId);
    expect(bal.reservedNano, 'a lease stayed held after expiry').toBe(0n);
    await expectJournalAddsUp(pgSchema.db, walletId);
    const charged = before - bal.availableNano;
    expect(charged % SPEECH_COST).toBe(0n);
    // A call is charged exactly when its usage record is written (same transaction): which calls were charged.
    const records = await pgSchema.db.query<{ request_id: string }>(`SELECT request_id FROM usage_records WHERE wallet_id = $1`, [
      walletId,
    ]);
    const chargedIds = records.rows.map((r) => r.request_id);
    expect(BigInt(chargedIds.length) * SPEECH_COST).toBe(charged);
    expect(new Set(chargedIds).size, 'a call charged twice').toBe(chargedIds.length);
    // A call cut by the kill may be charged (its charge committed, its answer lost with the process) or not.
    const cutButCharged = chargedIds.filter((id) => !answeredAt.has(id)).length;
    expect(answeredAt.size).toBeGreaterThanOrEqual(KILL_AFTER_ANSWERED);
    // A draw is one row, its usage record (which carries the draw's id), written in the order calls were charged,
    // each with the instant its charge was decided; a call is charged before its answer leaves. So a call lost with
    // the process was charged after the newest record written, and its answer arrived after that instant. A lost
    // call answered before it would mean draws skipped or reordered.
    const newest = await pgSchema.db.query<{ n: number; last: Date | string | null }>(
      `SELECT count(*)::int AS n, max(at) AS last FROM usage_records WHERE wallet_id = $1 AND transfer_id IS NOT NULL`,
      [walletId],
    );
    expect(newest.rows[0]!.n, 'no draw was written before the kill: the test did not exercise leases').toBeGreaterThan(0);
    const lastDrawnAt = new Date(newest.rows[0]!.last!).getTime();
    const charged1 = new Set(chargedIds);
    const lost = [...answeredAt].filter(([id]) => !charged1.has(id));
    expect(
      lost.filter(([, at]) => at < lastDrawnAt),
      'answered before the newest written draw, yet not charged',
    ).toEqual([]);
    // The answer's bytes leave only once its charge is committed: no answered call is lost with the process.
    expect(
      lost.map(([id]) => id),
      'answered in full, yet not charged',
    ).toEqual([]);
    console.log(
      `SIGKILL with leases: ${answeredAt.size} answered, ${chargedIds.length} charged (${cutButCharged} of them cut by the kill), ${lost.length} answered but lost with the process; ` +
        `the newest draw written was drawn ${killedAt - lastDrawnAt} ms before the kill`,
    );
    expect(again.child.exitCode).toBeNull();
  }, 60_000);
});
