// Attack (wt-moneyattack): two-processes-kill.test.ts on a small wallet, so the budget leases are small slices
// renewed and asked back all the time (a slice boundary at nearly every call), many calls are refused 402, and a
// third of them report usage far above their holds, more than the wallet has left: process A is SIGKILLed
// mid-burst. Afterwards, once A's leases have expired and B swept them: every answer a client received in full
// has exactly one usage record, none is charged twice or above its usage's price, the wallet fell by exactly
// what the usage records charged and never below zero, nothing stays held, and the journal adds up.
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
const WALLET_CREDITS = Number(process.env.PROBE_WALLET ?? 400_000); // $0.40: about 30 calls' holds; the calls above their holds drain it
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

let wholeFromA = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Outcome {
  ms?: number;
  id: string;
  via: string;
  whole: boolean;
  status: number | null;
}

async function call(g: ChildGateway, label: string, key: string, id: string, kind: number): Promise<Outcome> {
  const stream = kind % 2 === 0;
  const above = kind % 3 === 0;
  const leave = kind % 5 === 4;
  const content = `hello [[sim:call=${id}]] [[sim:long=40]]${above ? ' [[sim:usage input=30 output=1500]]' : ''}`;
  const ac = new AbortController();
  const t0 = Date.now();
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
    if (whole && label === 'A') wholeFromA++;
    return { id, via: label, whole, status: res.status, ms: Date.now() - t0 };
  } catch {
    return { id, via: label, whole: false, status: null, ms: Date.now() - t0 };
  }
}

describe.skipIf(!canRun)('two processes on a small wallet, one SIGKILLed mid-burst [postgres]', () => {
  it('every whole answer charged exactly once; nothing held after the lease ttl; the journal adds up', async () => {
    const w = await ledger.createWallet({ credits: WALLET_CREDITS });
    const keys = createKeyService(pg.db, { clock: systemClock });
    const { key } = await keys.createApiKey(w.id, { name: 'kill' });
    await keys.close();
    const [a, b] = await Promise.all([gateway(key), gateway(key)]);
    const before = await ledger.balance(w.id);

    const run = `k${Date.now()}`;
    const calls: Promise<Outcome>[] = [];
    const deadline = Date.now() + 30_000;
    // On this loaded machine a child's first calls take seconds: A is killed once it has answered some.
    let n = 0;
    let killed = false;
    let killedAt = 0;
    // Waves of calls through both; A is killed once it has answered two in full (a loaded machine's first calls
    // take seconds), while calls are in flight, and the waves go on 1.5 s more.
    const started = Date.now();
    while (Date.now() - started < (killed ? killedAt + 1_500 : 14_000) && Date.now() < deadline && n < 160) {
      for (let i = 0; i < 2; i++, n++) {
        const g = n % 2 === 0 ? a : b;
        calls.push(call(g, g === a ? 'A' : 'B', key, `${run}-${n}`, n));
      }
      if (!killed && (wholeFromA >= 2 || Date.now() - started > 12_000)) {
        a.child.kill('SIGKILL');
        killed = true;
        killedAt = Date.now() - started;
      }
      await sleep(100);
    }
    const outcomes = await Promise.all(calls);
    if (process.env.PROBE_LAT) console.log(outcomes.map((o) => `${o.via}:${o.status}:${o.ms}`).join(' '));
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
    expect(summary.statuses['402'] ?? 0, 'the wallet ran out: calls were refused 402').toBeGreaterThan(0);
    expect(uncharged).toEqual([]);
    expect(twice).toEqual([]);
    expect(summary.held).toBe('0');
    expect(credits.reserved_credits).toBe(0);
    expect(before.availableNano + before.reservedNano - after.availableNano - after.reservedNano).toBe(sumCharged);
    // No record charged above its usage at b-6's prices ($5 / $30 / $0.5 cached per 1M); below it only for a
    // shortfall (the wallet ran out).
    const wrong = await pg.db.query(
      `SELECT request_id, charged_nano FROM usage_records WHERE wallet_id = $1
          AND charged_nano > input_tokens * 5000 + output_tokens * 30000 + cache_read_tokens * 500`,
      [w.id],
    );
    expect(wrong.rows).toEqual([]);
    for (const l of after.lots) expect(l.availableNano >= 0n && l.reservedNano >= 0n).toBe(true);
    await expectJournalAddsUp(pg.db, w.id);
  }, 180_000);
});
