// `npm run bench`: one command, one run, every row side by side. The same calls go straight to a minimal
// upstream stub (direct), through the floor (the same stack doing no gateway work, bench/floor.ts), through
// the peer gateway (Portkey, bench/peer) and through our gateway with full billing on PostgreSQL and on
// PGlite; a Markdown table is printed and the rows are written as JSON (and the table as Markdown) under
// bench/results/. Everything listens on 127.0.0.1; every loop is bounded in time.
//
//   BENCH_SECONDS        seconds per row (default 5)
//   BENCH_QUICK=1        a short run of every row (smoke test)
//   BENCH_PEER=0         skip the peer
//   BENCH_FLOOR=0        skip the floor (bench/floor.ts: fastify in, undici out, no gateway work)
//   BENCH_WORKERS        GATEWAY_WORKERS for the extra vendor B rows on PostgreSQL (default: one per core; 1 skips them)
//   BENCH_SOAK_SECONDS   the soak (default 60)
//   BENCH_ROUNDS         paired rounds at the end (bench/rounds.ts; default 3, 0 skips them): the targets then read their medians
//   BENCH_SLOW_STREAMS   concurrent slow streams (default 1000, each 50 chunks 100 ms apart: 5 s)
//   BENCH_DATABASE_URL / TEST_DATABASE_URL   the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/test)
//   BENCH_RESULTS_DIR    where the JSON and Markdown go (default bench/results)
//   GATEWAY_CONFIG_DIR   the gateway rows on this config instead of the shipped one
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { probePostgres } from '../engine/db/scratch-schema.ts';
import { CALL_KINDS, callRequests, type Slow, slowRequests, type TargetKind } from './calls.ts';
import type { LoadRequest } from './load.ts';
import { type LoadClient, startLoadClient } from './load-client.ts';
import { measure, type Row, type RowPlan, type TargetName, type Watched } from './measure.ts';
import { type RoundTarget, runRounds } from './rounds.ts';
import { type BenchResults, renderMarkdown, targetChecks } from './table.ts';
import {
  type GatewayTarget,
  type Running,
  startFloor,
  startGatewayOnPglite,
  startGatewayOnPostgres,
  startPeer,
  startStub,
} from './targets.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const config = {
  quick: QUICK,
  seconds: Number(process.env.BENCH_SECONDS ?? (QUICK ? 0.3 : 5)),
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? (QUICK ? 0.2 : 5)),
  soakSeconds: Number(process.env.BENCH_SOAK_SECONDS ?? (QUICK ? 2 : 60)),
  rounds: Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3)),
  slowStreams: Number(process.env.BENCH_SLOW_STREAMS ?? (QUICK ? 50 : 1000)),
  slow: (QUICK ? { chunks: 10, delayMs: 50 } : { chunks: 50, delayMs: 100 }) as Slow,
  spreadWallets: 100,
  connections: [1, 32],
  peer: process.env.BENCH_PEER !== '0',
  workers: Number(process.env.BENCH_WORKERS ?? cpus().length),
  floor: process.env.BENCH_FLOOR !== '0',
  /** Which config the gateway rows run on: the shipped one (what users run), unless GATEWAY_CONFIG_DIR says otherwise. */
  gatewayConfig: process.env.GATEWAY_CONFIG_DIR ?? 'config',
};
const DATABASE_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const RESULTS_DIR = process.env.BENCH_RESULTS_DIR ?? 'bench/results';

const rows: Row[] = [];
const notes: string[] = [];
let loader: LoadClient;

async function record(plan: RowPlan, watched: Watched): Promise<void> {
  const row = await measure(loader, plan, watched);
  rows.push(row);
  const l = row.load;
  const rate = plan.burst
    ? `${(l.wallMs / 1000).toFixed(2)} s wall`
    : `${l.perSecond.toFixed(0)} req/s p50 ${l.latencyMs.p50.toFixed(2)} ms`;
  console.log(`  ${row.id.padEnd(44)} ${rate}${l.errors ? `  ${l.errors} errors: ${l.errorSamples[0]}` : ''}`);
}

/** Every call kind, plain and streaming, at each connection count; then what only some targets get. */
async function callRows(
  target: TargetName,
  kind: TargetKind,
  url: string,
  stubUrl: string,
  watched: Watched,
  keys?: string[],
): Promise<void> {
  await warmUp(
    target,
    url,
    CALL_KINDS.flatMap((k) => [false, true].flatMap((s) => callRequests(kind, k, s, { stubUrl, keys }))),
  );
  for (const connections of config.connections) {
    for (const what of CALL_KINDS) {
      for (const stream of [false, true]) {
        await record(
          {
            target,
            what,
            stream,
            wallet: keys ? 'hot' : 'none',
            url,
            requests: callRequests(kind, what, stream, { stubUrl, keys }),
            connections,
            seconds: config.seconds,
            countRows: target === 'gateway-postgres' && what === 'chat-b' && !stream && connections === 32,
          },
          watched,
        );
      }
    }
  }
}

/**
 * Unrecorded load first, so no row pays for JIT compilation, cold caches or new upstream connections: at the
 * most connections any row uses, so the first 32-connection row (vendor B, the one the targets read) does
 * not open the upstream connections a warm-up at 8 left unopened (the load generator's own connections are
 * new in every row, for every target alike). Then at the fewest, so the first one-connection row does not read
 * what the burst left behind (its queued background work, a database catching up) rather than the call itself.
 */
async function warmUp(target: TargetName, url: string, requests: LoadRequest[]): Promise<void> {
  for (const connections of [Math.max(...config.connections), Math.min(...config.connections)]) {
    const w = await measure(
      loader,
      { target, what: 'soak', stream: false, wallet: 'none', url, requests, connections, seconds: config.warmupSeconds },
      { pids: {}, withPostgres: false },
    );
    if (w.load.errors) notes.push(`${target}: ${w.load.errors} errors while warming up, first: ${w.load.errorSamples[0]}`);
  }
}

/**
 * The slow streams, twice: the first burst (recorded as slow-streams-cold) is the only load on the target that
 * opens a connection per stream, to the vendor as well as from the client, so it pays what the warm-up spares
 * every other row (new upstream connections, a path not yet compiled); the second, the row the target reads,
 * measures streaming itself. The load generator's own connections are new in both, for every target alike.
 */
async function slowRow(
  target: TargetName,
  kind: TargetKind,
  url: string,
  stubUrl: string,
  watched: Watched,
  keys?: string[],
): Promise<void> {
  for (const what of ['slow-streams-cold', 'slow-streams'] as const) {
    await record(
      {
        target,
        what,
        stream: true,
        wallet: keys ? 'hot' : 'none',
        url,
        requests: slowRequests(kind, config.slow, { stubUrl, keys }),
        connections: config.slowStreams,
        burst: config.slowStreams,
        rssEveryMs: 100,
      },
      watched,
    );
  }
}

async function gatewayRows(gw: GatewayTarget, stub: Running, withPostgres: boolean): Promise<void> {
  const target = gw.name as TargetName;
  const watched: Watched = { pids: { [target]: gw.pid, stub: stub.pid }, memoryOf: gw.pid, withPostgres, rowsWritten: gw.rowsWritten };
  await callRows(target, 'gateway', gw.url, stub.url, watched, [gw.hotKey]);
  const spread = callRequests('gateway', 'chat-b', false, { stubUrl: stub.url, keys: gw.spreadKeys });
  await warmUp(target, gw.url, spread);
  await record(
    { target, what: 'chat-b', stream: false, wallet: 'spread', url: gw.url, requests: spread, connections: 32, seconds: config.seconds },
    watched,
  );
  await slowRow(target, 'gateway', gw.url, stub.url, watched, [gw.hotKey]);
}

/**
 * Vendor B passthrough at each connection count on a gateway of its own: through GATEWAY_WORKERS processes
 * (what one machine's cores serve together, each worker's CPU watched).
 */
async function vendorBRows(gw: GatewayTarget, stub: Running): Promise<void> {
  const target = gw.name as TargetName;
  const serving = gw.servingPids();
  const alone = serving.length === 1 && serving[0] === gw.pid;
  const pids: Record<string, number> = { [alone ? target : 'primary']: gw.pid, stub: stub.pid };
  if (!alone) serving.forEach((pid, i) => (pids[`worker ${i + 1}`] = pid));
  const requests = callRequests('gateway', 'chat-b', false, { stubUrl: stub.url, keys: [gw.hotKey] });
  await warmUp(target, gw.url, requests);
  for (const connections of config.connections) {
    await record(
      { target, what: 'chat-b', stream: false, wallet: 'hot', url: gw.url, requests, connections, seconds: config.seconds },
      { pids, memoryOf: alone ? gw.pid : undefined, withPostgres: true },
    );
  }
}

async function soakRow(gw: GatewayTarget, stub: Running): Promise<void> {
  const requests = CALL_KINDS.flatMap((k) =>
    [false, true].flatMap((s) => callRequests('gateway', k, s, { stubUrl: stub.url, keys: [gw.hotKey] })),
  );
  const watched: Watched = { pids: { [gw.name]: gw.pid, stub: stub.pid }, memoryOf: gw.pid, withPostgres: true };
  await record(
    {
      target: gw.name as TargetName,
      what: 'soak',
      stream: false,
      wallet: 'hot',
      url: gw.url,
      requests,
      connections: 32,
      seconds: config.soakSeconds,
      rssEveryMs: 500,
    },
    watched,
  );
}

/** The paired rounds (rounds.ts): the floor, the peer and a gateway on PostgreSQL started again beside the stub. */
async function pairedRounds(stub: Running, databaseUrl: string, configDir: string | undefined): Promise<void> {
  const targets: RoundTarget[] = [
    { target: 'direct', kind: 'direct', url: stub.url, watched: { pids: { stub: stub.pid }, withPostgres: false } },
  ];
  const started: Running[] = [];
  const add = async (target: TargetName, kind: TargetKind, start: () => Promise<Running & { hotKey?: string }>) => {
    const t = await start();
    started.push(t);
    const watched: Watched = { pids: { [target]: t.pid, stub: stub.pid }, withPostgres: target === 'gateway-postgres' };
    targets.push({ target, kind, url: t.url, watched, keys: t.hotKey ? [t.hotKey] : undefined });
  };
  try {
    if (config.floor) await add('floor', 'direct', () => startFloor(stub.url));
    if (config.peer) await add('peer', 'peer', startPeer);
    await add('gateway-postgres', 'gateway', () => startGatewayOnPostgres(databaseUrl, stub.url, config.slow, 0, { configDir }));
    console.log(`paired rounds: ${targets.map((t) => t.target).join(', ')}, ${config.rounds} rounds`);
    for (const t of targets) await warmUp(t.target, t.url, callRequests(t.kind, 'chat-b', false, { stubUrl: stub.url, keys: t.keys }));
    await runRounds(targets, { rounds: config.rounds, seconds: config.seconds, stubUrl: stub.url, record });
  } finally {
    for (const t of started.reverse()) {
      await t.stop();
      const logged = loggedMessages(t.output());
      if (logged.length) notes.push(`${t.name} (paired rounds) logged ${logged.join('; ')}`);
    }
  }
}

async function withTarget<T extends Running>(start: () => Promise<T>, use: (t: T) => Promise<void>): Promise<void> {
  const t = await start();
  try {
    await use(t);
  } finally {
    await t.stop();
    // The gateway logs at warn: anything it logged is worth a look beside the figures, counted by message.
    const logged = loggedMessages(t.output());
    if (logged.length) notes.push(`${t.name} logged ${logged.join('; ')}`);
  }
}

/** Each warning or error message in a gateway's output, once, with how often it was logged, in order of first use. */
function loggedMessages(output: string): string[] {
  const counts = new Map<string, number>();
  for (const line of output.split('\n')) {
    if (!/"level":(40|50|60)/.test(line)) continue;
    let said: string;
    try {
      const entry = JSON.parse(line) as { msg?: string; warning?: string };
      said = entry.msg ?? entry.warning ?? line;
    } catch {
      said = line;
    }
    said = said.slice(0, 200);
    counts.set(said, (counts.get(said) ?? 0) + 1);
  }
  return [...counts].map(([said, n]) => `${n}× ${said}`);
}

function gitCommit(): string {
  try {
    return execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const startedAt = new Date();
  console.log(
    `bench: ${config.seconds} s per row${QUICK ? ' (quick)' : ''}, Node ${process.version}, ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(2)}`,
  );
  const postgres = await probePostgres(DATABASE_URL);
  if (!postgres.ok) notes.push(`PostgreSQL rows skipped: ${postgres.reason}`);
  if (!config.peer) notes.push('peer skipped (BENCH_PEER=0)');

  const configDir = process.env.GATEWAY_CONFIG_DIR; // undefined: the gateway's default, config/
  notes.push(`gateway rows on ${config.gatewayConfig}`);

  loader = startLoadClient();
  await withTarget(startStub, async (stub) => {
    console.log(`direct (stub ${stub.url})`);
    const direct: Watched = { pids: { stub: stub.pid }, withPostgres: false };
    await callRows('direct', 'direct', stub.url, stub.url, direct);
    await slowRow('direct', 'direct', stub.url, stub.url, direct);

    if (config.floor) {
      await withTarget(
        () => startFloor(stub.url),
        async (floor) => {
          console.log(`floor: fastify and undici, no gateway work (${floor.url})`);
          await callRows('floor', 'direct', floor.url, stub.url, {
            pids: { floor: floor.pid, stub: stub.pid },
            memoryOf: floor.pid,
            withPostgres: false,
          });
        },
      );
    }
    if (config.peer) {
      await withTarget(startPeer, async (peer) => {
        console.log(`peer (${peer.url})`);
        const watched: Watched = { pids: { peer: peer.pid, stub: stub.pid }, memoryOf: peer.pid, withPostgres: false };
        await callRows('peer', 'peer', peer.url, stub.url, watched);
        await slowRow('peer', 'peer', peer.url, stub.url, watched);
      });
    }
    if (postgres.ok) {
      await withTarget(
        () => startGatewayOnPostgres(DATABASE_URL, stub.url, config.slow, config.spreadWallets, { configDir }),
        async (gw) => {
          console.log(`gateway on PostgreSQL (${gw.url})`);
          await gatewayRows(gw, stub, true);
          await soakRow(gw, stub);
        },
      );
      if (config.workers > 1) {
        await withTarget(
          () => startGatewayOnPostgres(DATABASE_URL, stub.url, config.slow, 0, { configDir, workers: config.workers }),
          async (gw) => {
            console.log(`gateway on PostgreSQL, GATEWAY_WORKERS=${config.workers} (${gw.url})`);
            await vendorBRows(gw, stub);
          },
        );
      }
    }
    await withTarget(
      () => startGatewayOnPglite(stub.url, config.slow, config.spreadWallets, { configDir }),
      async (gw) => {
        console.log(`gateway on PGlite (${gw.url})`);
        await gatewayRows(gw, stub, false);
      },
    );
    if (postgres.ok && config.rounds > 0) await pairedRounds(stub, DATABASE_URL, configDir);
  }).finally(() => loader.close());

  const results: BenchResults = {
    meta: {
      startedAt: startedAt.toISOString(),
      seconds: (Date.now() - startedAt.getTime()) / 1000,
      node: process.version,
      cores: cpus().length,
      loadAverageAtEnd: loadavg()[0]!,
      commit: gitCommit(),
      config,
      notes,
    },
    rows,
    targets: [],
  };
  results.targets = targetChecks(results);
  const markdown = renderMarkdown(results);
  console.log(`\n${markdown}`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stem = join(RESULTS_DIR, startedAt.toISOString().replace(/[:.]/g, '-'));
  writeFileSync(`${stem}.json`, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(`${stem}.md`, `${markdown}\n`);
  console.log(`written: ${stem}.json, ${stem}.md`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
