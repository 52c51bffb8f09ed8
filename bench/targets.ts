// The processes the bench loads: the stub, the peer (Portkey, installed into bench/peer on first use) and our
// gateway as `npm start` runs it, on a PostgreSQL scratch schema or on its own embedded PGlite, each with one
// hot wallet (all load on one key) and `spreadWallets` more wallets with a key each.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { systemClock } from '../engine/core/clock.ts';
import { openScratchSchema } from '../engine/db/scratch-schema.ts';
import { createKeyService } from '../engine/keys/index.ts';
import { createLedger } from '../engine/money/ledger.ts';
import { type Slow, slowPrefix } from './calls.ts';
import { type Child, childPids, freePort, startNode } from './processes.ts';

export interface Running {
  name: string;
  url: string;
  pid: number;
  /** What the process printed (its last 100–200 kB). */
  output(): string;
  stop(): Promise<void>;
}

export interface GatewayTarget extends Running {
  hotKey: string;
  spreadKeys: string[];
  /** The processes that serve calls: the gateway itself, or its workers under GATEWAY_WORKERS. */
  servingPids(): number[];
  /** Rows the database has written so far (PostgreSQL's pg_stat_database; absent on PGlite). */
  rowsWritten?: () => Promise<number>;
}

/** Credits per wallet: far more than any run spends, so no row measures a 402. */
const WALLET_CREDITS = 10_000_000_000;

const asRunning = (c: Child, url: string): Running => ({ name: c.name, url, pid: c.pid, output: c.output, stop: c.stop });

export async function startStub(): Promise<Running> {
  const c = await startNode('stub', 'bench/stub.ts', { env: { STUB_PORT: '0' }, ready: /bench stub on (\S+)/ });
  return asRunning(c, c.match[1]!);
}

/** The floor (bench/floor.ts): fastify in, undici out, no gateway work, forwarding to the stub, with the gateway's node options. */
export async function startFloor(stubUrl: string): Promise<Running> {
  const nodeArgs = ['--import', 'tsx', ...startScriptNodeArgs()];
  const c = await startNode('floor', 'bench/floor.ts', {
    nodeArgs,
    args: [stubUrl],
    ready: /bench floor on (\S+)/,
    env: { NODE_ENV: 'production' },
  });
  return asRunning(c, c.match[1]!);
}

const PEER_DIR = 'bench/peer';

/** Installs the peer from its lock file the first time (npm registry), then starts it on loopback. */
export async function startPeer(): Promise<Running> {
  if (!existsSync(join(PEER_DIR, 'node_modules/@portkey-ai/gateway/build/start-server.js'))) {
    console.log('installing the peer (npm ci --prefix bench/peer) …');
    const npm = spawnSync('npm', ['ci', '--prefix', PEER_DIR, '--no-audit', '--no-fund'], { stdio: 'inherit', timeout: 300_000 });
    if (npm.status !== 0) throw new Error(`npm ci --prefix ${PEER_DIR} failed (${npm.status ?? npm.signal})`);
  }
  const port = await freePort();
  const c = await startNode('peer', join(PEER_DIR, 'start.mjs'), {
    nodeArgs: [],
    args: [String(port)],
    ready: /peer listening on (\S+)/,
    env: { NODE_ENV: 'production' },
  });
  return asRunning(c, c.match[1]!);
}

function gatewayEnv(stubUrl: string, slow: Slow, port: number, opts: GatewayOptions): Record<string, string> {
  return {
    ...(opts.configDir ? { GATEWAY_CONFIG_DIR: resolve(opts.configDir) } : {}),
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    GATEWAY_SIMULATE: '0',
    GATEWAY_VENDOR_A_URLS: stubUrl,
    GATEWAY_VENDOR_A_KEY: 'bench',
    GATEWAY_VENDOR_B_URLS: stubUrl,
    GATEWAY_VENDOR_B_KEY: 'bench',
    // The slow-stream row calls a vendor E model, whose only route is the stub's slow path.
    GATEWAY_VENDOR_E_URLS: `${stubUrl}${slowPrefix(slow)}`,
    GATEWAY_VENDOR_E_KEY: 'bench',
  };
}

/** Which config a gateway target runs on, and under what name its rows go. */
export interface GatewayOptions {
  /** GATEWAY_CONFIG_DIR for the gateway; without it, the gateway's own default (or the bench's environment). */
  configDir?: string | undefined;
  /** GATEWAY_WORKERS (PostgreSQL only). */
  workers?: number;
  name?: string;
}

async function startGatewayProcess(name: string, env: Record<string, string>): Promise<{ child: Child; url: string }> {
  // As `npm start` runs it: built into one file first (bin/start.mjs), with the start script's node options.
  // BENCH_GATEWAY_NODE_ARGS: more node options for the gateway alone (bench/profile.ts passes --cpu-prof).
  const nodeArgs = [...startScriptNodeArgs(), ...(process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  const child = await startNode(name, 'bin/start.mjs', { env, nodeArgs, ready: /gateway listening on (\S+)/ });
  return { child, url: child.match[1]! };
}

/** The node options of package.json's `start` script (`node <options> bin/start.mjs`). */
export function startScriptNodeArgs(): string[] {
  const script = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? '';
  const words = script.split(/\s+/);
  return words.slice(words.indexOf('node') + 1, words.indexOf('bin/start.mjs')).filter((w) => w.startsWith('--'));
}

/**
 * Gateway on a fresh PostgreSQL schema; wallets and keys written by this process on the same schema. With
 * `workers` above 1 it runs as GATEWAY_WORKERS processes behind one port.
 */
export async function startGatewayOnPostgres(
  serverUrl: string,
  stubUrl: string,
  slow: Slow,
  spreadWallets: number,
  opts: GatewayOptions = {},
): Promise<GatewayTarget> {
  const workers = opts.workers ?? 1;
  const scratch = await openScratchSchema(serverUrl);
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-bench-'));
  try {
    const ledger = createLedger(scratch.db, { clock: systemClock, owner: 'bench' });
    const keys = createKeyService(scratch.db, { clock: systemClock });
    const keyFor = async () => {
      const wallet = await ledger.createWallet({ credits: WALLET_CREDITS });
      return (await keys.createApiKey(wallet.id, { name: 'bench' })).key;
    };
    const hotKey = await keyFor();
    const spreadKeys: string[] = [];
    for (let i = 0; i < spreadWallets; i++) spreadKeys.push(await keyFor());
    await keys.close();
    const port = await freePort();
    const name = opts.name ?? (workers > 1 ? 'gateway-postgres-workers' : 'gateway-postgres');
    const env = {
      ...gatewayEnv(stubUrl, slow, port, opts),
      DATABASE_URL: scratch.url,
      GATEWAY_DATA_DIR: dataDir,
      GATEWAY_WORKERS: String(workers),
    };
    const { child, url } = await startGatewayProcess(name, env);
    return {
      name,
      url,
      pid: child.pid,
      servingPids: () => (workers > 1 ? childPids(child.pid) : [child.pid]),
      output: child.output,
      hotKey,
      spreadKeys,
      rowsWritten: async () => {
        const r = await scratch.db.query<{ n: string }>(
          `SELECT (tup_inserted + tup_updated + tup_deleted)::text AS n FROM pg_stat_database WHERE datname = current_database()`,
        );
        return Number(r.rows[0]?.n ?? 0);
      },
      async stop() {
        await child.stop();
        await scratch.cleanup();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await scratch.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
}

/** Gateway on its embedded PGlite (in a temporary folder): wallets through its admin API, keys through the key doors. */
export async function startGatewayOnPglite(
  stubUrl: string,
  slow: Slow,
  spreadWallets: number,
  opts: GatewayOptions = {},
): Promise<GatewayTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-bench-'));
  const adminToken = randomBytes(24).toString('hex');
  const port = await freePort();
  const name = opts.name ?? 'gateway-pglite';
  let child: Child | undefined;
  try {
    const started = await startGatewayProcess(name, {
      ...gatewayEnv(stubUrl, slow, port, opts),
      GATEWAY_DATA_DIR: dataDir,
      GATEWAY_ADMIN_TOKEN: adminToken,
    });
    child = started.child;
    const post = async (path: string, bearer: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await fetch(`${started.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const answer = (await res.json()) as Record<string, unknown>;
      if (res.status !== 201 && res.status !== 200) throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(answer)}`);
      return answer;
    };
    const keyFor = async () => {
      const wallet = await post('/admin/v1/wallets', adminToken, { credits: WALLET_CREDITS });
      const management = await post(`/admin/v1/wallets/${wallet.id}/management-keys`, adminToken, { name: 'bench' });
      const created = await post('/v1/keys', String(management.key), { name: 'bench' });
      const key = (created.data as { key?: string }[] | undefined)?.[0]?.key ?? (created.key as string | undefined);
      if (!key) throw new Error(`POST /v1/keys gave no key: ${JSON.stringify(created)}`);
      return key;
    };
    const hotKey = await keyFor();
    const spreadKeys: string[] = [];
    for (let i = 0; i < spreadWallets; i++) spreadKeys.push(await keyFor());
    const running = child;
    return {
      name,
      url: started.url,
      pid: running.pid,
      servingPids: () => [running.pid],
      output: running.output,
      hotKey,
      spreadKeys,
      async stop() {
        await running.stop();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await child?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
}
