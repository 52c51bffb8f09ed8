// Attack (wt-attack): two gateway processes on one wallet on PostgreSQL, leases on (short ttl), a burst of calls
// through both (streams and whole answers, some reporting usage far above their holds, some clients leaving
// mid-stream), and process A SIGKILLed mid-burst (once it has answered a few calls in full). Afterwards, once A's leases have expired and B swept them:
// every answer a client received in full has exactly one usage record (matched by its x-request-id), none is
// charged twice, the wallet fell by exactly what the usage records charged, nothing stays held (database and
// B's GET /v1/credits), and the journal adds up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { billingFor, LEASE_TTL_MS, limitsFor } from '../chaos/kill-target.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { vendorsAtSimulator } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const WALLET_CREDITS = 50_000_000; // $50: covers every call in full, above its hold or not
let pg: TestPostgres;
let sim: Simulator;
let ledger: Ledger;
const children: ChildGateway[] = [];

beforeAll(async () => {
  if (!canRun) return;
  pg = await openTestPostgres();
  sim = await startSimulator({ streamChunkDelayMs: 5 });
  ledger = createLedger(pg.db, { clock: systemClock });
}, 60_000);
afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await pg?.cleanup();
});

function gateway(apiKey: string): Promise<ChildGateway> {
  const env = { DATABASE_URL: pg.url, GATEWAY_SIMULATE: '0', LOG_LEVEL: 'error', ...vendorsAtSimulator(sim) };
  return startChildGateway(env, {
    apiKey,
    prepare: (tree) => {
      tree.edit('config/limits.yaml', limitsFor);
      tree.edit('config/billing.yaml', (t) => billingFor(t, true));
    },
  }).then((c) => (children.push(c), c));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Outcome {
  id: string;
  via: string;
  whole: boolean;
  status: number | null;
}

async function call(g: ChildGateway, label: string, key: string, id: string, kind: number): Promise<Outcome> {
  const stream = kind % 2 === 0;
  const above = kind % 3 === 0;
  const leave = kind % 5 === 4;
  const content = `hello [[sim:call=${id}]] [[sim:long=40]]${above ? ' [[sim:usage input=30 output=20000]]' : ''}`;
  const ac = new AbortController();
  try {
    const res = await fetch(`${g.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify({ model: 'b-6', max_completion_tokens: 400, stream, messages: [{ role: 'user', content }] }),
      signal: ac.signal,
    });
    if (leave && stream) {
      await res.body!.getReader().read();
      ac.abort();
      return { id, via: label, whole: false, status: res.status };
    }
    const text = await res.text();
    let whole = false;
    if (res.status === 200) {
      if (stream) whole = /data: \[DONE\]\s*$/.test(text);
      else {
        try {
          whole = JSON.parse(text).object === 'chat.completion';
        } catch {
          whole = false;
        }
      }
    }
    return { id, via: label, whole, status: res.status };
  } catch {
    return { id, via: label, whole: false, status: null };
  }
}

describe.skipIf(!canRun)('two processes on one wallet, one SIGKILLed mid-burst [postgres]', () => {
  it('every whole answer charged exactly once; nothing held after the lease ttl; the journal adds up', async () => {
    const w = await ledger.createWallet({ credits: WALLET_CREDITS });
    const keys = createKeyService(pg.db, { clock: systemClock });
    const { key } = await keys.createApiKey(w.id, { name: 'kill' });
    await keys.close();
    const [a, b] = await Promise.all([gateway(key), gateway(key)]);
    const before = await ledger.balance(w.id);

    const run = `k${Date.now()}`;
    const calls: Promise<Outcome>[] = [];
    let n = 0;
    let wholeViaA = 0;
    let killedAt = 0;
    // Waves of calls through both. A is killed once it has answered a few calls in full (not at a fixed time: a
    // slow machine may answer none in the first second), while later calls are in flight; the waves go on for
    // 1.5 s more through both, so calls to the dead A fail and B keeps serving.
    const started = Date.now();
    while (Date.now() - started < 30_000 && n < 400 && (!killedAt || Date.now() - killedAt < 1_500)) {
      for (let i = 0; i < 4; i++, n++) {
        const g = n % 2 === 0 ? a : b;
        const outcome = call(g, g === a ? 'A' : 'B', key, `${run}-${n}`, n);
        if (g === a) void outcome.then((o) => void (o.whole && wholeViaA++));
        calls.push(outcome);
      }
      if (!killedAt && wholeViaA >= 3) {
        a.child.kill('SIGKILL');
        killedAt = Date.now();
      }
      await sleep(60);
    }
    const killed = killedAt > 0;
    const outcomes = await Promise.all(calls);
    await a.exited;
    // A's leases expire after LEASE_TTL_MS; B's sweeper expires them and B's own go back when idle.
    await sim.outcomesSettled(30_000).catch(() => undefined);
    const heldQ = () =>
      pg.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM reservations WHERE wallet_id = $1 AND state = 'held'`, [w.id]);
    const until = Date.now() + LEASE_TTL_MS + 20_000;
    while (Date.now() < until && Number((await heldQ()).rows[0]!.n) > 0) await sleep(200);

    const recs = await pg.db.query<{ request_id: string; n: string; charged: string }>(
      `SELECT request_id, count(*)::text AS n, sum(charged_nano)::text AS charged FROM usage_records WHERE wallet_id = $1 GROUP BY request_id`,
      [w.id],
    );
    const byId = new Map(recs.rows.map((r) => [r.request_id, r]));
    const whole = outcomes.filter((o) => o.whole);
    const uncharged = whole.filter((o) => !byId.has(o.id));
    const twice = recs.rows.filter((r) => Number(r.n) > 1);
    const after = await ledger.balance(w.id);
    const sumCharged = recs.rows.reduce((s, r) => s + BigInt(r.charged), 0n);
    const credits = await fetch(`${b.base}/v1/credits`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json() as any);
    const summary = {
      calls: outcomes.length,
      whole: whole.length,
      wholeViaA: whole.filter((o) => o.via === 'A').length,
      refusedOrCut: outcomes.filter((o) => !o.whole).length,
      statuses: Object.fromEntries(
        [...new Set(outcomes.map((o) => String(o.status)))].map((s) => [s, outcomes.filter((o) => String(o.status) === s).length]),
      ),
      records: recs.rows.length,
      held: (await heldQ()).rows[0]!.n,
      spent: String(before.availableNano + before.reservedNano - after.availableNano - after.reservedNano),
      sumCharged: String(sumCharged),
      bReserved: credits.reserved_credits,
    };
    console.log(summary, { uncharged: uncharged.map((o) => o.id), twice });
    expect(killed).toBe(true);
    expect(summary.wholeViaA, 'A answered some calls in full before it was killed').toBeGreaterThan(0);
    expect(uncharged).toEqual([]);
    expect(twice).toEqual([]);
    expect(summary.held).toBe('0');
    expect(credits.reserved_credits).toBe(0);
    expect(before.availableNano + before.reservedNano - after.availableNano - after.reservedNano).toBe(sumCharged);
    // Each record charged exactly its usage at b-6's prices ($5 / $30 / $0.5 cached per 1M), above the hold too.
    const wrong = await pg.db.query(
      `SELECT request_id, charged_nano FROM usage_records WHERE wallet_id = $1
          AND charged_nano <> input_tokens * 5000 + output_tokens * 30000 + cache_read_tokens * 500`,
      [w.id],
    );
    expect(wrong.rows).toEqual([]);
    await expectJournalAddsUp(pg.db, w.id);
  }, 180_000);
});
