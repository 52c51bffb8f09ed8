// `npm run bench` in its short form (BENCH_QUICK=1, peer skipped) runs every row end to end against real
// processes (stub, floor, gateway on PostgreSQL and PGlite) and writes JSON with every row, each error-free; and the
// target arithmetic says PASS and MISS the right way round.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoadResult } from '../bench/load.ts';
import type { Row } from '../bench/measure.ts';
import { soakGrowthPercent, targetChecks, type BenchResults } from '../bench/table.ts';
import { postgresAvailability, REQUIRE_POSTGRES } from './helpers/databases.ts';

const CALL_ROWS = ['chat-b', 'chat-a', 'messages'].flatMap((what) => ['plain', 'stream'].flatMap((mode) => [1, 32].map((c) => `${what}/${mode}/c${c}`)));

describe('npm run bench (BENCH_QUICK=1, BENCH_PEER=0)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  let results: BenchResults;
  let markdown: string;
  let output = '';
  const withPostgres = postgresAvailability.ok;

  beforeAll(async () => {
    if (!withPostgres && REQUIRE_POSTGRES) throw new Error(postgresAvailability.ok ? '' : postgresAvailability.reason);
    const env: NodeJS.ProcessEnv = { ...process.env, BENCH_QUICK: '1', BENCH_PEER: '0', BENCH_WORKERS: '2', BENCH_RESULTS_DIR: dir };
    delete env.GATEWAY_CONFIG_DIR;
    delete env.BENCH_LEASES;
    const child = spawn('npm', ['run', 'bench'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 110_000);
      child.once('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    if (code !== 0) throw new Error(`npm run bench exited with ${code}:\n${output.slice(-4000)}`);
    const files = readdirSync(dir);
    results = JSON.parse(readFileSync(join(dir, files.find((f) => f.endsWith('.json'))!), 'utf8')) as BenchResults;
    markdown = readFileSync(join(dir, files.find((f) => f.endsWith('.md'))!), 'utf8');
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes every row, each answered without an error', () => {
    const gateways = withPostgres ? ['gateway-postgres', 'gateway-pglite'] : ['gateway-pglite'];
    const slowN = results.meta.config.slowStreams as number;
    const expected = [
      ...CALL_ROWS.map((r) => `direct/${r}`),
      `direct/slow-streams/stream/c${slowN}`,
      `direct/slow-streams-cold/stream/c${slowN}`,
      ...CALL_ROWS.map((r) => `floor/${r}`),
      ...gateways.flatMap((g) => [...CALL_ROWS.map((r) => `${g}/${r}`), `${g}/chat-b/plain/c32/spread`, `${g}/slow-streams/stream/c${slowN}`, `${g}/slow-streams-cold/stream/c${slowN}`]),
      ...(withPostgres
        ? ['gateway-postgres/soak/plain/c32', ...['workers'].flatMap((t) => [`gateway-postgres-${t}/chat-b/plain/c1`, `gateway-postgres-${t}/chat-b/plain/c32`])]
        : []),
    ];
    expect(results.rows.map((r) => r.id).sort()).toEqual(expected.sort());
    for (const row of results.rows) {
      expect(row.load.errors, `${row.id}: ${row.load.errorSamples.join(' | ')}`).toBe(0);
      expect(row.load.ok, row.id).toBeGreaterThan(0);
      expect(row.load.latencyMs.p50, row.id).toBeGreaterThan(0);
      if (row.stream) expect(row.load.ttfbMs!.p50, row.id).toBeLessThanOrEqual(row.load.latencyMs.p50);
    }
    // The slow streams took their whole schedule (chunks × delay), and all ended.
    const slow = results.meta.config.slow as { chunks: number; delayMs: number };
    for (const row of results.rows.filter((r) => r.what === 'slow-streams' || r.what === 'slow-streams-cold')) {
      expect(row.load.ok, row.id).toBe(slowN);
      expect(row.load.wallMs, row.id).toBeGreaterThanOrEqual(slow.chunks * slow.delayMs * 0.9);
    }
  });

  it('runs the gateway rows on the shipped config', () => {
    expect(results.meta.config.gatewayConfig).toBe('config');
    expect(markdown).toContain('Note: gateway rows on config');
  });

  it('measures CPU per process and the gateways memory', () => {
    for (const row of results.rows.filter((r) => r.target === 'gateway-postgres-workers')) {
      // Every worker is measured, and the primary, which serves nothing, beside them. One
      // kept-alive connection lands on one worker (the primary hands out connections, not
      // calls), so only at 32 connections must both have served.
      const workers = [row.cpuPercent['worker 1'], row.cpuPercent['worker 2']];
      for (const cpu of workers) expect(cpu, row.id).toBeDefined();
      if (row.connections > 1) for (const cpu of workers) expect(cpu, row.id).toBeGreaterThan(0);
      else expect(workers[0]! + workers[1]!, row.id).toBeGreaterThan(0);
      expect(row.cpuPercent.primary, row.id).toBeDefined();
    }
    for (const row of results.rows.filter((r) => r.target.startsWith('gateway') && r.target !== 'gateway-postgres-workers')) {
      expect(row.cpuPercent[row.target], row.id).toBeGreaterThan(0);
      expect(row.cpuPercent.load, row.id).toBeGreaterThan(0);
      expect(row.rssMb!.peak, row.id).toBeGreaterThan(20);
      if (row.target !== 'gateway-postgres') continue;
      expect(row.cpuPercent.postgres, row.id).toBeDefined();
      // Every answer's end waits for its charge's commit: every row shows the database working.
      expect(row.cpuPercent.postgres, row.id).toBeGreaterThan(0);
    }
    const soak = results.rows.find((r) => r.what === 'soak');
    if (withPostgres) expect(soak!.rssMb!.samples.length).toBeGreaterThanOrEqual(4);
  });

  it('checks every target, and says so in the Markdown', () => {
    expect(results.targets.length).toBe(withPostgres ? 21 : 19);
    for (const t of results.targets) {
      const needsPeer = t.name.includes('vs peer');
      const needsPostgres = /PostgreSQL|gateway-postgres|added|A translated|slow streams|soak/.test(t.name);
      if (needsPeer || (needsPostgres && !withPostgres)) expect(t.pass, t.name).toBeNull();
      else expect(typeof t.pass, t.name).toBe('boolean');
      const verdict = t.pass === null ? 'NOT MEASURED' : t.pass ? 'PASS' : 'MISS';
      expect(markdown).toContain(`| ${t.name} |`);
      expect(markdown.split('\n').find((l) => l.startsWith(`| ${t.name} |`))).toContain(verdict);
    }
    expect(output).toContain('### Targets');
  });
});

describe('bench target arithmetic', () => {
  const load = (perSecond: number, p50 = 1, p99 = 2, errors = 0): LoadResult => ({
    ok: 100,
    errors,
    errorSamples: [],
    seconds: 1,
    perSecond,
    latencyMs: { p50, p99 },
    wallMs: 1000,
    cpuSeconds: 0,
  });
  const row = (id: string, l: LoadResult, extra: Partial<Row> = {}): Row => {
    const [target, what, mode, c, spread] = id.split('/');
    return { id, target, what, stream: mode === 'stream', connections: Number(c!.slice(1)), wallet: spread ? 'spread' : target!.startsWith('gateway') ? 'hot' : 'none', load: l, cpuPercent: {}, ...extra } as Row;
  };
  const find = (checks: ReturnType<typeof targetChecks>, name: string) => checks.find((c) => c.name === name)!;

  it('compares throughput as ratios and latency as added milliseconds, in the right direction', () => {
    const checks = targetChecks({
      rows: [
        row('direct/chat-b/plain/c32', load(10_000)),
        row('peer/chat-b/plain/c32', load(300)),
        row('gateway-postgres/chat-b/plain/c32', load(3_000)),
        row('direct/chat-b/plain/c1', load(0, 0.2, 0.5)),
        row('gateway-postgres/chat-b/plain/c1', load(0, 0.9, 1.5)),
      ],
    });
    expect(find(checks, 'B passthrough, 32 conn, PostgreSQL: req/s vs peer')).toMatchObject({ value: 10, pass: true, by: '1.250x the limit' });
    expect(find(checks, 'B passthrough, 32 conn, PostgreSQL: req/s vs direct')).toMatchObject({ value: 0.3, pass: true });
    const p50 = find(checks, 'chat, vendor B passthrough, 1 conn: added p50');
    expect(p50.value).toBeCloseTo(0.7);
    expect(p50.pass).toBe(false);
    expect(p50.by).toBe('+0.200 ms over the limit');
    expect(find(checks, 'chat, vendor B passthrough, 1 conn: added p99')).toMatchObject({ pass: true });
    expect(find(checks, 'soak: RSS growth').pass).toBeNull();
  });

  it('counts a row with errors as not measured, never as a pass', () => {
    const checks = targetChecks({ rows: [row('direct/chat-b/plain/c32', load(10_000)), row('gateway-postgres/chat-b/plain/c32', load(9_000, 1, 2, 5))] });
    expect(find(checks, 'B passthrough, 32 conn, PostgreSQL: req/s vs direct').pass).toBeNull();
  });

  it('takes soak growth from the medians of the first and last tenth of the samples', () => {
    // A GC spike in the first tenth's neighbourhood moves nothing; 100 → 106 MB is 6 %.
    const samples = [100, 100, 300, 100, 100, 100, 100, 100, 100, 100, 106, 106, 106, 106, 106, 106, 106, 106, 106, 106];
    const soak = row('gateway-postgres/soak/plain/c32', load(1), { rssMb: { start: 100, end: 106, peak: 300, hwm: 300, samples } });
    expect(soakGrowthPercent(soak)).toBeCloseTo(6);
  });
});
