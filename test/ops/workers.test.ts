// GATEWAY_WORKERS: several gateway processes on one port and one PostgreSQL, as an operator runs them. Calls
// reach every worker, a scrape of /metrics answers for all of them, a reload through the admin API or SIGHUP
// reaches every worker, a worker that dies is replaced, SIGTERM drains them all, and the settings it cannot
// serve are refused at the start.

import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { spendableOf } from '../../engine/money/spendable.ts';
import { workersFromEnv } from '../../engine/process/workers.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { series } from '../helpers/metrics-text.ts';
import { alive } from '../helpers/process-output.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;

/** `npx gateway reload` (the SIGHUP form) on a data folder: its exit code and everything it printed. */
const reloadCommand = (dataDir: string) =>
  new Promise<{ code: number; out: string }>((resolve) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', 'engine/cli/cli.ts', 'reload'],
      { env: { ...process.env, GATEWAY_DATA_DIR: dataDir } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    ),
  );
const ADMIN = 'workers-admin-token';

let pgSchema: TestPostgres;
let sim: Simulator;
let ledger: Ledger;
let gw: ChildGateway | undefined;

beforeAll(async () => {
  if (!canRun) return;
  pgSchema = await openTestPostgres();
  sim = await startSimulator();
  ledger = createLedger(pgSchema.db, { clock: systemClock });
}, 60_000);

afterAll(async () => {
  gw?.remove();
  await sim?.close();
  await pgSchema?.cleanup();
});

const vendorEnv = (): Record<string, string> => {
  const env: Record<string, string> = { GATEWAY_SIMULATE: '0' };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  return env;
};

/** One request on a connection of its own, so the workers' shared port hands each to a worker in turn. */
function onNewConnection(base: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>((resolve, reject) => {
    const req = request(new URL(path, base), { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** The pids of the processes that logged a finished request for `path` after `from` characters of output. */
function pidsServing(out: string, path: string, from: number): Set<number> {
  const pids = new Set<number>();
  for (const line of out.slice(from).split('\n')) {
    if (!line.includes(`"path":"${path}`) && !line.includes(`"url":"${path}`)) continue;
    const pid = /"pid":(\d+)/.exec(line)?.[1];
    if (pid) pids.add(Number(pid));
  }
  return pids;
}

async function until(done: () => boolean, ms = 10_000): Promise<void> {
  for (const started = Date.now(); !done(); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() - started > ms) throw new Error('timed out');
  }
}

describe('GATEWAY_WORKERS', () => {
  it('refuses what one process must own, with the reason, before starting anything', () => {
    expect(workersFromEnv({}, () => VENDORS)).toEqual({ workers: 1 });
    expect(workersFromEnv({ GATEWAY_WORKERS: '1' }, () => VENDORS)).toEqual({ workers: 1 });
    const urls = { DATABASE_URL: 'postgres://x', GATEWAY_VENDOR_A_URLS: 'http://127.0.0.1:1' };
    expect(workersFromEnv({ ...urls, GATEWAY_WORKERS: '3', GATEWAY_SIMULATE: '0' }, () => VENDORS)).toEqual({ workers: 3 });
    expect(workersFromEnv({ ...urls, GATEWAY_WORKERS: 'auto', GATEWAY_SIMULATE: '0' }, () => VENDORS)).toMatchObject({
      workers: expect.any(Number),
    });
    for (const bad of ['0', '-2', '1.5', 'two', '999'])
      expect(
        workersFromEnv({ ...urls, GATEWAY_WORKERS: bad }, () => VENDORS),
        bad,
      ).toMatchObject({ problem: expect.stringContaining(`'${bad}'`) });
    expect(workersFromEnv({ GATEWAY_WORKERS: '2' }, () => VENDORS)).toMatchObject({ problem: expect.stringContaining('DATABASE_URL') });
    // Vendors B to E would be simulated: the simulator's video jobs live in one process.
    expect(workersFromEnv({ ...urls, GATEWAY_WORKERS: '2', GATEWAY_SIMULATE: '1' }, () => VENDORS)).toMatchObject({
      problem: expect.stringContaining('simulator'),
    });
  });

  it.runIf(canRun)(
    'a start it cannot serve exits 1 with the reason',
    async () => {
      const refused = await startChildGateway({ GATEWAY_WORKERS: '2' }, { apiKey: 'unused', waitForBanner: false });
      try {
        expect(await refused.exited).toBe(1);
        expect(refused.out.text).toContain('GATEWAY_WORKERS=2 needs DATABASE_URL');
      } finally {
        refused.remove();
      }
    },
    30_000,
  );

  it.runIf(canRun)(
    'serves calls from every worker, reloads them all, replaces one that dies, and drains them all on SIGTERM',
    async () => {
      const wallet = await ledger.createWallet();
      await ledger.topUp(wallet.id, { nano: 1_000_000_000n });
      const keys = createKeyService(pgSchema.db, { clock: systemClock });
      const { key } = await keys.createApiKey(wallet.id, { name: 'workers' });
      await keys.close();
      gw = await startChildGateway(
        { ...vendorEnv(), GATEWAY_METRICS_OPEN: 'loopback', DATABASE_URL: pgSchema.url, GATEWAY_ADMIN_TOKEN: ADMIN, GATEWAY_WORKERS: '2' },
        { apiKey: key },
      );
      const primary = gw.child.pid!;
      expect(gw.out.text.match(/gateway listening on/g)).toHaveLength(1);
      expect(gw.out.text).toContain('2 worker processes (GATEWAY_WORKERS)');
      expect(Number(readFileSync(join(gw.dataDir, 'gateway.pid'), 'utf8'))).toBe(primary);

      const auth = { authorization: `Bearer ${key}` };
      const priceOfD3 = async () => {
        const res = await onNewConnection(gw!.base, '/v1/models', { headers: auth });
        return (JSON.parse(res.text) as { data: { id: string; pricing: { input_per_mtok: number } }[] }).data.find((m) => m.id === 'd-3')!
          .pricing.input_per_mtok;
      };
      const pricesSeen = async (calls: number) => {
        const from = gw!.out.text.length;
        const prices = new Set<number>();
        for (let i = 0; i < calls; i++) prices.add(await priceOfD3());
        await new Promise((r) => setTimeout(r, 300)); // the last access-log lines
        return { prices, pids: pidsServing(gw!.out.text, '/v1/models', from) };
      };

      // Every worker serves, none of them the primary.
      const first = await pricesSeen(8);
      expect(first.prices).toEqual(new Set([3]));
      expect(first.pids.size).toBe(2);
      expect(first.pids.has(primary)).toBe(false);

      // Chat calls are charged and journaled as on one process, whichever worker takes them.
      const chatFrom = gw.out.text.length;
      let charged = 0n;
      for (let i = 0; i < 6; i++) {
        const chat = await onNewConnection(gw.base, '/v1/chat/completions', {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'd-3', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 }),
        });
        expect(chat.status, chat.text).toBe(200);
        expect(BigInt(String(chat.headers['x-service-charged-nano']))).toBeGreaterThan(0n);
        charged += BigInt(String(chat.headers['x-service-charged-nano']));
      }
      await new Promise((r) => setTimeout(r, 300)); // the last access-log lines
      expect(pidsServing(gw.out.text, '/v1/chat/completions', chatFrom).size).toBe(2);

      // A scrape reaches one worker and answers for both: every scrape shows all six calls and their charge.
      for (let i = 0; i < 4; i++) {
        const scrape = await onNewConnection(gw.base, '/metrics');
        expect(scrape.status, scrape.text).toBe(200);
        expect(series(scrape.text, 'gateway_requests_total', { door: 'chat', model: 'd-3', vendor: 'd', status: '200' })).toBe(6);
        expect(series(scrape.text, 'gateway_request_duration_seconds_count', { door: 'chat' })).toBe(6);
        expect(series(scrape.text, 'gateway_charged_nano_usd_total', { vendor: 'd' })).toBe(Number(charged));
        // Read of the whole gateway by each worker: taken once, not added up.
        expect(series(scrape.text, 'gateway_holds_in_flight')).toBe(0);
        expect(series(scrape.text, 'gateway_catalog_version')).toBe(1);
        expect(series(scrape.text, 'gateway_last_reload_ok')).toBe(1);
      }

      // A reload through the admin API reaches the worker that did not answer it.
      gw.tree.edit('catalog/vendor-d.yaml', (t) =>
        t.replace('pricing: { input: 3, output: 15, cache_read: 0.75 }', 'pricing: { input: 4, output: 15, cache_read: 0.75 }'),
      );
      const reload = await onNewConnection(gw.base, '/admin/v1/reload', { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
      expect(reload.status, reload.text).toBe(200);
      await until(() => (gw!.out.text.match(/catalog and config reloaded/g) ?? []).length >= 2);
      const afterAdmin = await pricesSeen(8);
      expect(afterAdmin.prices).toEqual(new Set([4]));
      expect(afterAdmin.pids.size).toBe(2);
      const scrapeAfterReload = await onNewConnection(gw.base, '/metrics');
      expect(series(scrapeAfterReload.text, 'gateway_catalog_version')).toBe(2);
      expect(series(scrapeAfterReload.text, 'gateway_reloads_total', { result: 'ok' })).toBe(1);

      // `npx gateway reload` signals the pid in the pid file (the primary): every worker reloads, and the
      // command hears the result from the first one.
      gw.tree.edit('catalog/vendor-d.yaml', (t) => t.replace('pricing: { input: 4,', 'pricing: { input: 5,'));
      const reloaded = await reloadCommand(gw.dataDir);
      expect(reloaded.code, reloaded.out).toBe(0);
      expect(reloaded.out).toContain(`sent SIGHUP to the gateway (pid ${primary})`);
      expect(reloaded.out).toMatch(/reloaded: catalog version \d+: .*d-3/);
      await until(() => (gw!.out.text.match(/catalog and config reloaded/g) ?? []).length >= 4);
      expect((await pricesSeen(8)).prices).toEqual(new Set([5]));

      // A worker that does not answer fails the scrape (503) rather than showing half the counts.
      const victim = [...afterAdmin.pids][0]!;
      process.kill(victim, 'SIGSTOP');
      const scrapes: Promise<{ status: number; text: string }>[] = [];
      let refused: { status: number; text: string } | undefined;
      try {
        for (let i = 0; i < 4 && !refused; i++) {
          const scrape = onNewConnection(gw.base, '/metrics');
          scrapes.push(scrape);
          // One the stopped worker took waits for it; one the other worker took is refused within its wait.
          const answer = await Promise.race([scrape, new Promise<undefined>((r) => setTimeout(r, 4_000))]);
          if (answer) refused = answer;
        }
      } finally {
        process.kill(victim, 'SIGCONT');
      }
      expect(refused?.status).toBe(503);
      expect(refused?.text).toContain('1 of 2 workers did not answer');
      for (const answer of await Promise.all(scrapes)) expect([200, 503]).toContain(answer.status);

      // A worker that dies is replaced, and calls keep being served by two workers.
      process.kill(victim, 'SIGKILL');
      await gw.waitFor(/worker \d exited \(SIGKILL\); starting another/, 10_000);
      let replaced = new Set<number>();
      for (let i = 0; i < 50 && replaced.size < 2; i++) {
        await new Promise((r) => setTimeout(r, 200));
        replaced = (await pricesSeen(4)).pids;
      }
      expect(replaced.size).toBe(2);
      expect(replaced.has(victim)).toBe(false);

      // SIGTERM to the primary drains every worker; the pid file goes with them.
      const workers = [...replaced];
      gw.child.kill('SIGTERM');
      expect(await gw.exited).toBe(0);
      expect(workers.filter(alive)).toEqual([]);
      expect(existsSync(join(gw.dataDir, 'gateway.pid'))).toBe(false);
      // The drained workers gave their leases back; the one killed outright left its lease to expire and be swept.
      const bal = await spendableOf(pgSchema.db, wallet.id);
      expect(bal.reservedNano, 'a call left a hold').toBe(0n);
      const leases = await pgSchema.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM reservations WHERE wallet_id = $1 AND state = 'held'`,
        [wallet.id],
      );
      expect(leases.rows[0]!.n).toBeLessThanOrEqual(1);
      await expectJournalAddsUp(pgSchema.db, wallet.id);
    },
    120_000,
  );
});
