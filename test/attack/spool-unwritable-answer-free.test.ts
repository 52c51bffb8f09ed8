// Attack (wt-moneyattack), fixed: the charge spool (GATEWAY_DATA_DIR/charges) cannot be written, and the database
// is slow for longer than ledger.commit_wait_ms. The answer's end marker used to go out anyway (the charge "at
// risk"), the spool write failed and was only logged, and a SIGKILL right after left the whole answer charged
// nowhere. Now a charge the spool could not keep is waited for: the streams do not end while their charges wait,
// a kill then leaves no answer received in full, and once the database takes them the streams end, charged.
// How: a real gateway process on PostgreSQL, leases on as shipped, commit_wait_ms 300; `charges` in its data folder
// is a regular file (so the spool's mkdir/open fail, even for root); the wallet's row and rollup rows
// are locked by the test.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { vendorsAtSimulator } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const adminToken = randomBytes(16).toString('hex');
let pgs: TestPostgres;
let sim: Simulator;
let dataDir: string;
const children: ChildGateway[] = [];

beforeAll(async () => {
  if (!canRun) return;
  pgs = await openTestPostgres();
  sim = await startSimulator({ streamChunkDelayMs: 5 });
  dataDir = mkdtempSync(join(tmpdir(), 'gw-spool-ro-'));
  writeFileSync(join(dataDir, 'charges'), 'not a folder: the spool cannot be written here\n');
}, 60_000);
afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await pgs?.cleanup();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function launch(): Promise<ChildGateway> {
  const env = {
    DATABASE_URL: pgs.url,
    GATEWAY_SIMULATE: '0',
    GATEWAY_ADMIN_TOKEN: adminToken,
    LOG_LEVEL: 'warn',
    ...vendorsAtSimulator(sim),
  };
  const c = await startChildGateway(env, {
    apiKey: 'unused',
    dataDir,
    prepare: (tree) => tree.edit('config/billing.yaml', (y) => y.replace(/^ {2}commit_wait_ms: \d+/m, '  commit_wait_ms: 300')),
  });
  children.push(c);
  return c;
}

const call = (base: string, path: string, token: string, body?: unknown, method = 'POST') =>
  fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });

it.skipIf(!canRun)(
  'a whole answer is charged after a SIGKILL even when the spool cannot be written and the database was slow',
  async () => {
    const first = await launch();
    const wallet = (await (await call(first.base, '/admin/v1/wallets', adminToken, { credits: 10_000_000 })).json()) as { id: string };
    const mk = (await (await call(first.base, `/admin/v1/wallets/${wallet.id}/management-keys`, adminToken, {})).json()) as { key: string };
    const apiKey = ((await (await call(first.base, '/v1/keys', mk.key, { name: 'class' })).json()) as { data: { key: string }[] }).data[0]!
      .key;
    // One call first: the process takes its lease while the database answers.
    const warm = await call(first.base, '/v1/chat/completions', apiKey, {
      model: 'b-5',
      max_completion_tokens: 50,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(warm.status).toBe(200);
    await warm.text();

    // The database is slow for this wallet: its row and its daily rollup rows are locked, so every charge's
    // transaction waits (one owed on the lease writes no wallet or lot row, only its record and its rollup).
    const locker = new pg.Client({ connectionString: pgs.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE', [wallet.id]);
    await locker.query('SELECT 1 FROM usage_daily WHERE wallet_id = $1 FOR UPDATE', [wallet.id]);

    const streamBody = {
      model: 'b-5',
      stream: true,
      max_completion_tokens: 500,
      messages: [{ role: 'user', content: 'go [[sim:long=40]]' }],
    };
    const stream = async () => {
      const r = await call(first.base, '/v1/chat/completions', apiKey, streamBody);
      return r.status === 200 ? r.text().catch(() => 'cut') : '';
    };
    // Past the commit wait (300 ms) by far, the streams have not ended: their charges are neither written nor kept.
    const waiting = Array.from({ length: 2 }, stream);
    const ended = await Promise.race([Promise.all(waiting).then(() => true), new Promise((r) => setTimeout(() => r(false), 2_000))]);
    expect(ended, 'a stream ended while its charge was neither committed nor kept').toBe(false);
    // The database takes the charges again: the streams end in full, each charged.
    await locker.query('ROLLBACK');
    const texts = await Promise.all(waiting);
    expect(texts.filter((t) => /data: \[DONE\]\s*$/.test(t)).length).toBe(2);

    // The same again, killed while the charges wait: the clients received no whole answer, so none is free.
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE', [wallet.id]);
    await locker.query('SELECT 1 FROM usage_daily WHERE wallet_id = $1 FOR UPDATE', [wallet.id]);
    const killed = Array.from({ length: 2 }, stream);
    await new Promise((r) => setTimeout(r, 1_500));
    first.child.kill('SIGKILL');
    await first.exited;
    const cutTexts = await Promise.all(killed);
    await locker.query('ROLLBACK');
    await locker.end();
    expect(cutTexts.filter((t) => /data: \[DONE\]\s*$/.test(t)).length, 'no whole answer left a killed process').toBe(0);
    expect(first.out.text).toMatch(/the charge spool cannot be written/);
    expect(first.out.text).toMatch(/neither committed nor kept on disk/);
    // A killed stream's charge whose write and COMMIT were sent before the kill commits once the lock is gone: its
    // vendor work is charged, once, though its answer was cut. One not sent is not charged.
    const recs = await pgs.db.query<{ n: number; calls: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT request_id)::int AS calls FROM usage_records WHERE wallet_id = $1',
      [wallet.id],
    );
    expect(recs.rows[0]!.n, 'the warm-up call, the two whole streams, and at most the two cut ones').toBeGreaterThanOrEqual(3);
    expect(recs.rows[0]!.n).toBeLessThanOrEqual(5);
    expect(recs.rows[0]!.calls, 'no call charged twice').toBe(recs.rows[0]!.n);
  },
  120_000,
);
