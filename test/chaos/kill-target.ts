// A gateway child process the chaos harness can SIGKILL and start again, on either database:
// - 'postgres': a scratch schema of the test PostgreSQL (DATABASE_URL), which the test reads while it runs;
// - 'pglite': the embedded database on a data folder (GATEWAY_DATA_DIR, no DATABASE_URL), started again on the
//   same folder and port. PGlite belongs to one process, so the test reaches it only through the gateway (the
//   admin API and the key doors) while it runs, and opens the folder itself once the last gateway has stopped.
// Wallets and keys are made over HTTP on both, so both run the same code. The config is the shipped one with
// budget leases set on or off, and times shortened only where a test must wait for them (hold expiry, sweeps).

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Db } from '../../engine/db/db.ts';
import { openDatabase } from '../../engine/db/open.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, type TestPostgres } from '../helpers/databases.ts';
import { freePort } from '../helpers/free-port.ts';
import type { tempCatalogTree } from '../helpers/temp-catalog.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';
import type { ChaosTarget } from './harness.ts';

export type KillDatabase = 'postgres' | 'pglite';

/**
 * A killed process's call holds expire this soon, and the next process sweeps every 200 ms. Far above a call's
 * life even on the loaded 2-core machine (a cold child answered streams after 1.1 s): a live call's hold swept
 * before its settle would show up as an uncharged answer that the kill did not cause. A restart takes ~5 s
 * there, so most holds have expired by the time the new process sweeps.
 */
export const RESERVATION_TTL_MS = 4_000;
/**
 * leases.ttl_ms: a killed process's leases are `held` reservations until they expire and the next process
 * sweeps them; the shipped 60 s would make every run wait a minute. A live process renews its leases every
 * 200 ms here (the least of a third of the ttl and half idle_return_ms, at least 200 ms), far inside 4 s.
 */
export const LEASE_TTL_MS = 4_000;

/**
 * limits.yaml with the short hold expiry and sweep. The call time limits stay as shipped: no vendor stalls
 * here, and a short limit would cut slow streams on a loaded machine, an outcome the kill did not cause.
 */
export function limitsFor(text: string): string {
  return text
    .replace(/^reservation_ttl_ms: \d+/m, `reservation_ttl_ms: ${RESERVATION_TTL_MS}`)
    .replace(/^sweep_interval_ms: \d+/m, 'sweep_interval_ms: 200');
}

/** billing.yaml with leases on or off whatever the shipped default is, and the test's shorter lease times. */
export function billingFor(text: string, leases: boolean): string {
  if (!/^leases:\n {2}enabled: (true|false)/m.test(text)) throw new Error('billing.yaml: no `leases: enabled:` to set');
  const out = text.replace(/^leases:\n {2}enabled: (true|false)/m, `leases:\n  enabled: ${leases}`);
  if (!leases) return out;
  // idle_return_ms: a run's leases go back soon after its calls, so the wait for its holds to end is short
  // (the shipped 30 s would keep them until the next kill, and every run would wait out its settle time).
  return out.replace(/^ {2}ttl_ms: \d+/m, `  ttl_ms: ${LEASE_TTL_MS}`).replace(/^ {2}idle_return_ms: \d+/m, '  idle_return_ms: 150');
}

export interface KillTarget {
  target: ChaosTarget;
  database: KillDatabase;
  /** Every process's address, the one killed first; a second process (PostgreSQL only) is never killed. */
  urls: readonly string[];
  /** A call to the admin API, or with `token` to the key doors; throws unless 2xx. */
  admin<T>(method: string, path: string, body?: unknown, token?: string): Promise<T>;
  /** The management key the target made for a wallet. */
  managementKey(walletId: string): string;
  /** SIGKILLs the gateway and starts another on the same database and port; resolves once it listens. */
  killAndRestart(): Promise<void>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Db whose connection comes later: the embedded database is the child's until the audit opens it. */
function dbOpenedLater(): { db: Db; open(inner: Db): void; inner(): Db | null } {
  let inner: Db | null = null;
  const get = () => {
    if (!inner) throw new Error('the embedded database belongs to the child gateway until the audit opens it');
    return inner;
  };
  const db: Db = {
    kind: 'pglite',
    query: (sql, params) => get().query(sql, params),
    transaction: (fn) => get().transaction(fn),
    listen: (channel, on, gap) => get().listen(channel, on, gap),
    notify: (channel, payload) => get().notify(channel, payload),
    close: async () => inner?.close(),
  };
  return { db, open: (d) => (inner = d), inner: () => inner };
}

/** `processes: 2`: a second gateway on the same PostgreSQL schema, beside the one killed (PGlite has one owner). */
export async function startKillTarget(database: KillDatabase, opts: { leases: boolean; processes?: 1 | 2 }): Promise<KillTarget> {
  if (opts.processes === 2 && database !== 'postgres') throw new Error('two processes share only a PostgreSQL database');
  const sim: Simulator = await startSimulator({ streamChunkDelayMs: 3 });
  const schema: TestPostgres | null = database === 'postgres' ? await openTestPostgres() : null;
  const dataDir = database === 'pglite' ? mkdtempSync(join(tmpdir(), 'gw-kill-')) : null;
  const later = dbOpenedLater();
  const port = await freePort();
  const adminToken = randomBytes(16).toString('hex');
  const url = `http://127.0.0.1:${port}`;
  // DATABASE_URL empty, not absent: the test's own environment must not point the embedded gateway at a server.
  const env: Record<string, string> = {
    DATABASE_URL: schema?.url ?? '',
    GATEWAY_SIMULATE: '0',
    GATEWAY_ADMIN_TOKEN: adminToken,
    LOG_LEVEL: 'error',
    PORT: String(port),
  };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = [0, 1].map((i) => sim.routeUrl(`${v}${i}`)).join(',');
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = `vendor-${v}-secret`;
  }
  const prepare = (tree: ReturnType<typeof tempCatalogTree>) => {
    tree.edit('config/limits.yaml', limitsFor);
    // Unchanged when the shipped file already says what this mode wants (leases off, today).
    const billing = tree.read('config/billing.yaml');
    if (billingFor(billing, opts.leases) !== billing) tree.edit('config/billing.yaml', (t) => billingFor(t, opts.leases));
  };
  const launch = () => startChildGateway(env, { apiKey: 'unused', port, dataDir: dataDir ?? undefined, prepare });
  let child: ChildGateway = await launch();
  const otherPort = await freePort();
  const other: ChildGateway | null =
    opts.processes === 2
      ? await startChildGateway({ ...env, PORT: String(otherPort) }, { apiKey: 'unused', port: otherPort, prepare })
      : null;
  let lastKillAt = 0;

  const admin = async <T>(method: string, path: string, body?: unknown, token = adminToken): Promise<T> => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? null : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  };
  // A management key per wallet, to make its API keys through the key doors.
  const managementKeys = new Map<string, string>();

  const target: ChaosTarget = {
    url,
    sim,
    db: schema?.db ?? later.db,
    async newWallet(credits) {
      const w = await admin<{ id: string }>('POST', '/admin/v1/wallets', { credits });
      managementKeys.set(w.id, (await admin<{ key: string }>('POST', `/admin/v1/wallets/${w.id}/management-keys`, {})).key);
      return w.id;
    },
    async newApiKey(walletId, name) {
      const r = await admin<{ data: { id: string; key: string }[] }>('POST', '/v1/keys', { name }, managementKeys.get(walletId));
      return { id: r.data[0]!.id, key: r.data[0]!.key! };
    },
    // The embedded database is counted through the admin API, which shows call holds (a lease's hold counts as
    // the wallet's to spend there): beforeAudit waits out the leases' expiry before anything is read.
    heldCount: schema
      ? undefined
      : async (walletIds) => {
          let n = 0;
          for (const id of walletIds)
            n += (await admin<{ reserved_credits: number }>('GET', `/admin/v1/wallets/${id}`)).reserved_credits > 0 ? 1 : 0;
          return n;
        },
    async beforeAudit() {
      if (!dataDir) return;
      // Every hold of a killed process has expired and the live one has swept it (the PostgreSQL runs check
      // this through heldCount; here it is read after the stop). Then a graceful stop writes the live
      // process's own draws and returns its leases, as `npm stop` would, and the folder is the test's.
      const due = lastKillAt + Math.max(RESERVATION_TTL_MS, LEASE_TTL_MS) + 1_000;
      if (Date.now() < due) await sleep(due - Date.now());
      child.child.kill('SIGTERM');
      await child.exited;
      child.remove();
      later.open(await openDatabase({ dataDir, skipMigrations: true }));
    },
  };

  return {
    target,
    database,
    urls: other ? [url, other.base] : [url],
    admin,
    managementKey: (walletId) => managementKeys.get(walletId)!,
    async killAndRestart() {
      child.child.kill('SIGKILL');
      await child.exited;
      lastKillAt = Date.now();
      child.remove();
      child = await launch();
    },
    async close() {
      child.remove();
      other?.remove();
      await later.inner()?.close();
      await sim.close();
      await schema?.cleanup();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
