// Answers that went out before their charges were written (another session held the wallet's lots locked), from a
// process then killed: their holds are marked as owed, so the sweeper on the other process does not give their
// money back, and the other process spends only what is left. When the killed process's folder is served again, its
// spool is written in full, each answer at its price, and the holds are given back. Real processes on PostgreSQL.
import { readdirSync } from 'node:fs';
import pg from 'pg';
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
const AT_RISK = 4;
let db: TestPostgres;
let sim: Simulator;
let ledger: Ledger;
const children: ChildGateway[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A gateway whose holds live LEASE_TTL_MS (swept every 200 ms) and whose answers wait 300 ms for their commit. */
function gateway(apiKey: string, opts: { dataDir?: string; port?: number } = {}): Promise<ChildGateway> {
  const env = { DATABASE_URL: db.url, GATEWAY_SIMULATE: '0', LOG_LEVEL: 'warn', ...vendorsAtSimulator(sim) };
  return startChildGateway(env, {
    apiKey,
    ...opts,
    prepare: (tree) => {
      tree.edit('config/limits.yaml', limitsFor);
      tree.edit('config/billing.yaml', (t) => billingFor(t, true).replace(/^ {2}commit_wait_ms: \d+/m, '  commit_wait_ms: 300'));
    },
  }).then((c) => (children.push(c), c));
}

beforeAll(async () => {
  if (!canRun) return;
  db = await openTestPostgres();
  sim = await startSimulator({ streamChunkDelayMs: 2 });
  ledger = createLedger(db.db, { clock: systemClock });
}, 60_000);
afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await db?.cleanup();
});

/** A streamed vendor B chat of about `long` output words; whole: the end marker arrived. */
async function chat(g: ChildGateway, key: string, id: string, long: number): Promise<{ status: number | null; whole: boolean }> {
  try {
    const res = await fetch(`${g.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify({
        model: 'b-6',
        max_completion_tokens: 400,
        stream: true,
        messages: [{ role: 'user', content: `hello [[sim:call=${id}]] [[sim:long=${long}]]` }],
      }),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    return { status: res.status, whole: res.status === 200 && /data: \[DONE\]\s*$/.test(text) };
  } catch {
    return { status: null, whole: false };
  }
}

describe.skipIf(!canRun)('answers kept on disk by a process then killed [postgres]', () => {
  it('keep their holds past the sweeper, and are charged in full when the folder is served again', async () => {
    const w = await ledger.createWallet({ credits: 300_000 });
    const keys = createKeyService(db.db, { clock: systemClock });
    const { key } = await keys.createApiKey(w.id, { name: 'k' });
    await keys.close();
    let a = await gateway(key);
    const b = await gateway(key);
    const run = `kh${Date.now()}`;
    expect((await chat(a, key, `${run}-warm`, 40)).whole).toBe(true);

    // Another session locks the wallet's lots and daily rollup rows while A's calls stream: their answers go out at
    // risk, kept on disk (a charge owed on a lease waits on its rollup row, one drawn from lots on the lots).
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    const pending = Array.from({ length: AT_RISK }, (_, i) => chat(a, key, `${run}-risk${i}`, 250));
    await sleep(150);
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE', [w.id]);
    await locker.query('SELECT 1 FROM usage_daily WHERE wallet_id = $1 FOR UPDATE', [w.id]);
    const atRisk = await Promise.all(pending);
    expect(atRisk.every((o) => o.whole)).toBe(true);
    expect(readdirSync(`${a.dataDir}/charges`).length).toBeGreaterThan(0);
    const kept = async () =>
      (
        await db.db.query<{ owner: string; n: string }>(
          `SELECT owner, count(*)::text AS n FROM reservations WHERE wallet_id = $1 AND state = 'held' AND kept_at IS NOT NULL GROUP BY owner`,
          [w.id],
        )
      ).rows;
    await expect.poll(async () => (await kept()).length, { timeout: 5_000 }).toBe(1);
    const deadOwner = (await kept())[0]!.owner;
    a.child.kill('SIGKILL');
    await a.exited;
    await locker.query('ROLLBACK');
    await locker.end();

    // B serves the wallet past A's holds' life: the sweeper gives back what A's dead calls held, not what it owes.
    const drainUntil = Date.now() + LEASE_TTL_MS + 3_000;
    for (let n = 0; Date.now() < drainUntil && n < 400; ) {
      const os = await Promise.all([0, 1, 2, 3].map(() => chat(b, key, `${run}-b${n++}`, 400)));
      if (os.some((o) => o.status !== 200)) await sleep(100);
    }
    expect((await kept()).map((k) => k.owner)).toEqual([deadOwner]);

    // A's folder served again: its spool is written, each answer at its price, and the kept holds go back.
    a = await gateway(key, { dataDir: a.dataDir, port: Number(new URL(a.base).port) });
    await a.waitFor(/charges left by a stopped process written/, 30_000);
    await expect.poll(async () => (await kept()).length, { timeout: 10_000 }).toBe(0);
    // b-6's catalog prices (catalog/vendor-b.yaml: 5, 30 and 0.5 US$ a million tokens), in nano-USD a token.
    const records = await db.db.query<{ request_id: string; charged: string; price: string }>(
      `SELECT request_id, charged_nano::text AS charged,
              (input_tokens * 5000 + output_tokens * 30000 + cache_read_tokens * 500)::text AS price
         FROM usage_records WHERE wallet_id = $1 AND request_id LIKE $2 ORDER BY request_id`,
      [w.id, `${run}-risk%`],
    );
    expect(records.rows).toHaveLength(AT_RISK);
    for (const r of records.rows) expect(r.charged, r.request_id).toBe(r.price);
    const held = await db.db.query('SELECT 1 FROM reservations WHERE wallet_id = $1 AND owner = $2 AND state = $3', [
      w.id,
      deadOwner,
      'held',
    ]);
    expect(held.rows).toHaveLength(0);
    await expectJournalAddsUp(db.db, w.id);
  }, 120_000);
});
