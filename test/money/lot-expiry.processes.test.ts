// Lots that expire across two gateway processes on one PostgreSQL, on their real clocks: a burst of calls to both
// runs through a lot's expiry. Before it the expiring lot pays (soonest first); from it the lot pays only for the
// calls admitted before it (no hold is placed on it), both processes stop counting it in GET /v1/credits
// at once, its remainder leaves as one `expire` row and one audit entry however many processes' passes ran, every
// answer is charged exactly what it said, no money is created, and the journal and the ledger audit add up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { checkLedger } from '../../engine/money/audit.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { expireDueLots } from '../../engine/money/lot-expiry.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { leasesOn } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp, takenAfterExpiry } from '../helpers/ledger.ts';
import { vendorsAtSimulator } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
/** tts-1: 1,000 characters cost 15,000,000 nano, fixed before the call (hold = charge). */
const SPEECH_COST = 15_000_000n;
const speechBody = JSON.stringify({ model: 'tts-1', input: 'x'.repeat(1000), voice: 'alloy' });
/** The expiring lot lapses this long after the burst starts; the burst runs on past it. */
const EXPIRES_AFTER_MS = 3_000;
const BURST_MS = 6_000;

let pg: TestPostgres;
let sim: Simulator;
let ledger: Ledger;
const children: ChildGateway[] = [];

beforeAll(async () => {
  if (!canRun) return;
  pg = await openTestPostgres();
  sim = await startSimulator();
  ledger = createLedger(pg.db, { clock: systemClock });
}, 60_000);

afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await pg?.cleanup();
});

function gateway(apiKey: string): Promise<ChildGateway> {
  const env = { DATABASE_URL: pg.url, GATEWAY_SIMULATE: '0', LOG_LEVEL: 'warn', ...vendorsAtSimulator(sim) };
  return startChildGateway(env, {
    apiKey,
    prepare: (tree) => {
      tree.edit('config/billing.yaml', (y) => leasesOn(y).replace(/^ {2}min_slice_credits: \d+/m, '  min_slice_credits: 1'));
      tree.edit('config/limits.yaml', (t) => t.replace(/^sweep_interval_ms: \d+/m, 'sweep_interval_ms: 200'));
    },
  }).then((c) => (children.push(c), c));
}

const speech = (g: ChildGateway, key: string) =>
  fetch(`${g.base}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: speechBody,
  })
    .then(async (r) => ({ status: r.status, charged: r.headers.get('x-service-charged-nano'), ok: (await r.arrayBuffer()).byteLength > 0 }))
    .catch(() => ({ status: 0, charged: null, ok: false }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Calls one after another on `g` until `until` (Date.now()), bounded. */
async function callsUntil(g: ChildGateway, key: string, until: number) {
  const out: Awaited<ReturnType<typeof speech>>[] = [];
  for (let i = 0; i < 2_000 && Date.now() < until; i++) out.push(await speech(g, key));
  return out;
}

describe.skipIf(!canRun)('lots that expire across processes', () => {
  it('a burst through an expiry: the expired lot pays only for calls admitted before it, credits drop on both, the journal adds up', async () => {
    const w = await ledger.createWallet();
    const keys = createKeyService(pg.db, { clock: systemClock });
    const { key } = await keys.createApiKey(w.id, { name: 'class' });
    await keys.close();
    const keeps = await ledger.topUp(w.id, { nano: 4_000n * SPEECH_COST });
    const [a, b] = await Promise.all([gateway(key), gateway(key)]);
    const start = Date.now();
    const expiresAt = new Date(start + EXPIRES_AFTER_MS);
    const soon = await ledger.topUp(w.id, { nano: 2_000n * SPEECH_COST, expiresAt });

    const results = (await Promise.all([a, a, b, b].map((g) => callsUntil(g, key, start + BURST_MS)))).flat();
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    for (const r of results) expect(r.charged).toBe(String(SPEECH_COST));

    // Within a minute (here: the processes' 200 ms passes) the remainder has left, once.
    let expired: { amount_nano: string }[] = [];
    for (let i = 0; i < 100 && expired.length === 0; i++) {
      await sleep(100);
      expired = (
        await pg.db.query<{ amount_nano: string }>(`SELECT amount_nano::text FROM ledger_journal WHERE lot_id = $1 AND kind = 'expire'`, [
          soon.id,
        ])
      ).rows;
    }
    expect(expired.length).toBeGreaterThan(0);
    // Both processes agree: the expired lot is neither listed nor counted.
    for (const g of [a, b]) {
      const c = (await (await fetch(`${g.base}/v1/credits`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
      expect(c.lots.map((l: any) => l.id)).not.toContain(soon.id);
      expect(c.lots.find((l: any) => l.id === keeps.id).expires_at).toBeNull();
    }

    // After its expiry the lot pays only for calls admitted before it: no hold placed on it, and no more taken than
    // those calls cost, whether they rode a lease or held on their own (docs/money.md).
    expect((await takenAfterExpiry(pg.db, w.id, soon.id, expiresAt)).problems).toEqual([]);
    const paidBefore = await pg.db.query<{ s: string }>(
      `SELECT coalesce(sum(amount_nano), 0)::text AS s FROM ledger_journal WHERE lot_id = $1 AND kind = 'settle'`,
      [soon.id],
    );
    expect(BigInt(paidBefore.rows[0]!.s), 'the soonest-expiring lot paid nothing: the test did not exercise it').toBeGreaterThan(0n);

    // Stop both (their leases go back and their last draws are written), then audit everything.
    for (const g of [a, b]) g.child.kill('SIGTERM');
    await Promise.all([a, b].map((g) => g.exited));
    await expireDueLots(pg.db, 'test', new Date(), (e) => expect.fail(String(e))); // what a lease gave back at the stop
    const { bal, sum } = await expectJournalAddsUp(pg.db, w.id);
    expect(bal.reservedNano).toBe(0n);
    expect(sum.chargedNano).toBe(BigInt(results.length) * SPEECH_COST); // every answer charged, once
    const lot = bal.lots.find((l) => l.id === soon.id)!;
    const onLot = await pg.db.query<{ charged: string }>(
      `SELECT coalesce(sum(amount_nano), 0)::text AS charged FROM ledger_journal WHERE lot_id = $1 AND kind = 'settle'`,
      [soon.id],
    );
    // No money created: what the lot paid and what expired is exactly what it was given.
    expect(BigInt(onLot.rows[0]!.charged) + lot.expiredNano).toBe(lot.grantedNano);
    expect(lot.availableNano).toBe(0n);
    expect((await checkLedger(pg.db, { walletIds: [w.id], heldExpiredBefore: null })).ok).toBe(true);
    // One audit entry per expiry move (the lease given back at the stop may make a second), by the gateway itself.
    const moves = await pg.db.query(`SELECT 1 FROM ledger_journal WHERE lot_id = $1 AND kind = 'expire'`, [soon.id]);
    const trail = await pg.db.query<{ actor_kind: string; target_id: string }>(
      `SELECT actor_kind, target_id FROM wallet_audit WHERE wallet_id = $1 AND action = 'credits.expired'`,
      [w.id],
    );
    expect(trail.rows.length).toBe(moves.rows.length);
    expect(trail.rows.every((r) => r.actor_kind === 'system' && r.target_id === soon.id)).toBe(true);
    const leased = await pg.db.query(`SELECT 1 FROM reservations WHERE wallet_id = $1 AND call_id LIKE 'lease:%'`, [w.id]);
    expect(leased.rows.length, 'no lease was taken: the test did not exercise them').toBeGreaterThan(1);
  }, 120_000);
});
