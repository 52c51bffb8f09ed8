// Attack (wt-moneyattack): the charge spool replayed for charges that already landed. A process answers streams
// while the database is slow (their charges at risk, kept in GATEWAY_DATA_DIR/charges), the charges then land, and
// the process is SIGKILLed before its spool says so (the window between a commit and the spool's `landed` line:
// simulated by putting the spool file, copied while the charges were at risk, back after the kill). The next
// process on the folder writes every kept charge again; each is keyed by its id (a draw by its call's, a settle
// by its reservation's), so the wallet must not be charged twice: one usage record per call, what left the wallet
// is their sum, the journal adds up. PostgreSQL, real processes, leases on and off.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { leasesOff, leasesOn } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { vendorsAtSimulator } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const adminToken = randomBytes(16).toString('hex');
let pgs: TestPostgres;
let sim: Simulator;
const children: ChildGateway[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  if (!canRun) return;
  pgs = await openTestPostgres();
  sim = await startSimulator({ streamChunkDelayMs: 5 });
}, 60_000);
afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await pgs?.cleanup();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function launch(dataDir: string, leases: boolean): Promise<ChildGateway> {
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
    prepare: (tree) =>
      tree.edit('config/billing.yaml', (y) =>
        (leases ? leasesOn : leasesOff)(y.replace(/^ {2}commit_wait_ms: \d+/m, '  commit_wait_ms: 300')),
      ),
  });
  children.push(c);
  return c;
}

const call = (base: string, path: string, token: string, body?: unknown) =>
  fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const leases of process.env.PROBE_LEASES ? [process.env.PROBE_LEASES === 'on'] : [true, false]) {
  describe.skipIf(!canRun)(`spool replayed after its charges landed [postgres, leases ${leases ? 'on' : 'off'}]`, () => {
    it('charges nothing twice', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'gw-spool-twice-'));
      dirs.push(dataDir);
      const first = await launch(dataDir, leases);
      const wallet = (await (await call(first.base, '/admin/v1/wallets', adminToken, { credits: 10_000_000 })).json()) as { id: string };
      const mk = (await (await call(first.base, `/admin/v1/wallets/${wallet.id}/management-keys`, adminToken, {})).json()) as {
        key: string;
      };
      const apiKey = ((await (await call(first.base, '/v1/keys', mk.key, { name: 'class' })).json()) as { data: { key: string }[] })
        .data[0]!.key;
      const warm = await call(first.base, '/v1/chat/completions', apiKey, {
        model: 'b-5',
        max_completion_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(warm.status).toBe(200);
      await warm.text();

      const locker = new pg.Client({ connectionString: pgs.url });
      await locker.connect();
      await locker.query('BEGIN');
      // Charges wait (their usage records cannot be inserted); holds and leases can still be written.
      await locker.query('LOCK TABLE usage_records IN SHARE MODE');
      const body = { model: 'b-5', stream: true, max_completion_tokens: 500, messages: [{ role: 'user', content: 'go [[sim:long=40]]' }] };
      const texts = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const r = await call(first.base, '/v1/chat/completions', apiKey, body);
          return r.status === 200 ? r.text() : '';
        }),
      );
      const whole = texts.filter((t) => /data: \[DONE\]\s*$/.test(t)).length;
      const spool = join(dataDir, 'charges');
      const copied = existsSync(spool) ? readdirSync(spool).map((f) => [f, readFileSync(join(spool, f), 'utf8')] as const) : [];
      await locker.query('ROLLBACK');
      await locker.end();

      const count = async () =>
        (await pgs.db.query<{ n: number }>('SELECT count(*)::int AS n FROM usage_records WHERE wallet_id = $1', [wallet.id])).rows[0]!.n;
      const until = Date.now() + 20_000;
      while (Date.now() < until && (await count()) < 1 + whole) await sleep(100);
      await sleep(300);
      first.child.kill('SIGKILL');
      await first.exited;
      const ledger = createLedger(pgs.db, { clock: systemClock });
      const before = await ledger.balance(wallet.id);
      // The kill came before the spool said the charges landed.
      mkdirSync(spool, { recursive: true });
      for (const [f, text] of copied) writeFileSync(join(spool, f), text);

      const second = await launch(dataDir, leases);
      await second.waitFor(/charges left by a stopped process/, 20_000).catch(() => undefined);
      await sleep(500);
      const after = await ledger.balance(wallet.id);
      const recs = await pgs.db.query<{ n: number; s: string }>(
        'SELECT count(*)::int AS n, coalesce(sum(charged_nano),0)::text AS s FROM usage_records WHERE wallet_id = $1',
        [wallet.id],
      );
      const spent = 10_000_000n * 1000n - after.availableNano - after.reservedNano;
      console.log({
        leases,
        whole,
        keptLines: copied.map(([, t]) => t.trim().split('\n').length),
        records: recs.rows[0]!.n,
        charged: recs.rows[0]!.s,
        spent: String(spent),
        movedByReplay: String(before.availableNano + before.reservedNano - after.availableNano - after.reservedNano),
        log: second.out.text
          .split('\n')
          .filter((l) => /stopped process/.test(l))
          .map((l) => l.slice(0, 240)),
      });
      expect(whole).toBeGreaterThan(0);
      expect(copied.length, 'the charges at risk were kept on disk').toBeGreaterThan(0);
      expect(recs.rows[0]!.n).toBe(1 + whole);
      expect(spent).toBe(BigInt(recs.rows[0]!.s));
      expect(after.availableNano + after.reservedNano).toBe(before.availableNano + before.reservedNano);
      await expectJournalAddsUp(ledger, wallet.id);
    }, 120_000);
  });
}
