// `npm run bench`: throughput and latency of chat calls straight to the simulator versus through the
// gateway (full billing: auth, reservation, settlement), as ratios measured in one run, plus the
// gateway's resident memory. Everything runs on loopback; every loop is bounded in time.
//
//   BENCH_SECONDS (default 5) per measurement, BENCH_CONCURRENCY (default 32).
//   PostgreSQL is measured too when TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) answers.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { systemClock } from '../engine/core/clock.ts';
import { createKeyService } from '../engine/keys/index.ts';
import { createLedger } from '../engine/money/ledger.ts';
import { openScratchSchema, probePostgres } from '../engine/db/scratch-schema.ts';

const BENCH_DATABASE_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const BODY = JSON.stringify({ model: 'b-5-mini', max_completion_tokens: 64, messages: [{ role: 'user', content: 'benchmark call' }] });

interface Load {
  requests: number;
  errors: number;
  perSecond: number;
  p50: number;
  p99: number;
}

function startProcess(args: string[], env: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; output: () => string; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`not ready in 60 s:\n${out}`)), 60_000);
    const poll = setInterval(() => {
      const m = out.match(ready);
      if (m) {
        clearInterval(poll);
        clearTimeout(deadline);
        resolve({ child, output: () => out, match: m });
      }
    }, 50);
    child.on('exit', (code) => reject(new Error(`exited with ${code}:\n${out}`)));
  });
}

async function load(url: string, path: string, key: string): Promise<Load> {
  const pool = new Pool(url, { connections: CONCURRENCY });
  const latencies: number[] = [];
  let errors = 0;
  const until = Date.now() + SECONDS * 1000;
  const worker = async () => {
    while (Date.now() < until) {
      const t0 = performance.now();
      const res = await pool.request({
        method: 'POST',
        path,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: BODY,
      });
      await res.body.text();
      if (res.statusCode === 200) latencies.push(performance.now() - t0);
      else errors++;
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const elapsed = (Date.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { requests: latencies.length, errors, perSecond: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) };
}

const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

async function gatewayWith(simRoute: string, db: { kind: 'pglite' } | { kind: 'postgres'; url: string }) {
  const port = 30000 + Math.floor(Math.random() * 20000);
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-bench-'));
  const env: Record<string, string> = {
    PORT: String(port),
    LOG_LEVEL: 'warn',
    GATEWAY_SIMULATE: '0',
    GATEWAY_VENDOR_B_URLS: simRoute,
    GATEWAY_VENDOR_B_KEY: 'bench',
    GATEWAY_DATA_DIR: dataDir,
    ...(db.kind === 'postgres' ? { DATABASE_URL: db.url } : {}),
  };
  const started = await startProcess(['engine/main.ts'], env, /gateway listening on (\S+)/);
  let key = started.output().match(/API key:\s+(sk-svc-\S+)/)?.[1];
  if (db.kind === 'postgres') key = await postgresKey(db.url);
  if (!key) throw new Error(`no API key:\n${started.output()}`);
  return {
    url: started.match[1],
    key,
    pid: started.child.pid!,
    async stop() {
      started.child.kill('SIGTERM');
      await new Promise((r) => started.child.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A funded wallet and a key on the benchmark's own PostgreSQL schema. */
async function postgresKey(url: string): Promise<string> {
  const { openPg } = await import('../engine/db/pg.ts');
  const db = await openPg({ url });
  try {
    const ledger = createLedger(db, { clock: systemClock, owner: 'bench' });
    const wallet = await ledger.createWallet({ credits: 1_000_000_000 });
    const keys = createKeyService(db, { clock: systemClock });
    const { key } = await keys.createApiKey(wallet.id, { name: 'bench' });
    await keys.close();
    return key;
  } finally {
    await db.close();
  }
}

async function main() {
  const sim = await startProcess(['simulator/main.ts'], { SIM_PORT: '0' }, /vendor simulator on (\S+)/);
  const simUrl = sim.match[1];
  const rows: { mode: string; load: Load; ratio: number; rss?: number }[] = [];
  try {
    const direct = await load(simUrl, '/r/b0/v1/chat/completions', 'direct');
    rows.push({ mode: 'direct to vendor (simulator)', load: direct, ratio: 1 });

    const targets: ({ kind: 'pglite' } | { kind: 'postgres'; url: string })[] = [{ kind: 'pglite' }];
    let pgCleanup: (() => Promise<void>) | undefined;
    const postgresAvailability = await probePostgres(BENCH_DATABASE_URL);
    if (postgresAvailability.ok) {
      const pg = await openScratchSchema(BENCH_DATABASE_URL);
      pgCleanup = pg.cleanup;
      targets.push({ kind: 'postgres', url: pg.url });
    } else {
      console.log(`PostgreSQL skipped: ${postgresAvailability.reason}`);
    }
    for (const target of targets) {
      const gw = await gatewayWith(`${simUrl}/r/b0`, target);
      try {
        const through = await load(gw.url, '/v1/chat/completions', gw.key);
        rows.push({ mode: `through gateway (${target.kind})`, load: through, ratio: through.perSecond / direct.perSecond, rss: rssMb(gw.pid) });
      } finally {
        await gw.stop();
      }
    }
    await pgCleanup?.();
  } finally {
    sim.child.kill('SIGTERM');
  }

  const lines = [
    `chat completions, ${CONCURRENCY} concurrent, ${SECONDS} s each, Node ${process.version}`,
    '',
    '| mode | req/s | p50 ms | p99 ms | errors | ratio to direct | gateway RSS MB |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.mode} | ${r.load.perSecond.toFixed(0)} | ${r.load.p50.toFixed(1)} | ${r.load.p99.toFixed(1)} | ${r.load.errors} | ${r.ratio.toFixed(3)} | ${r.rss?.toFixed(0) ?? ''} |`,
    ),
  ];
  console.log(lines.join('\n'));
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(join('bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}.md`), lines.join('\n') + '\n');
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
