// `npm run bench` in its short form (BENCH_QUICK=1, peer skipped) runs every row end to end against real
// processes (stub, floor, gateway on PostgreSQL and PGlite) and writes JSON with every row, each error-free; and the
// target arithmetic says PASS and MISS the right way round.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoadResult } from '../../bench/load.ts';
import type { Row } from '../../bench/measure.ts';
import { type BenchResults, cpuMsPerCall, median, soakGrowthPercent, targetChecks } from '../../bench/table.ts';
import { postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';

const CALL_ROWS = ['chat-b', 'chat-a', 'messages'].flatMap((what) =>
  ['plain', 'stream'].flatMap((mode) => [1, 32].map((c) => `${what}/${mode}/c${c}`)),
);

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
      ...gateways.flatMap((g) => [
        ...CALL_ROWS.map((r) => `${g}/${r}`),
        `${g}/chat-b/plain/c32/spread`,
        `${g}/slow-streams/stream/c${slowN}`,
        `${g}/slow-streams-cold/stream/c${slowN}`,
      ]),
      ...(withPostgres
        ? [
            'gateway-postgres/soak/plain/c32',
            ...['workers'].flatMap((t) => [`gateway-postgres-${t}/chat-b/plain/c1`, `gateway-postgres-${t}/chat-b/plain/c32`]),
            // One paired round (rounds.ts) in the quick run, each target at 32 connections and at 1.
            ...['direct', 'floor', 'gateway-postgres'].flatMap((t) => [`${t}/chat-b/plain/c32/round1`, `${t}/chat-b/plain/c1/round1`]),
          ]
        : []),
    ];
    expect(results.rows.map((r) => r.id).sort()).toEqual(expected.sort());
    for (const row of results.rows) {
      // What the gateways logged goes with a failure: a refusal's cause is in their log, not in the answer.
      const why = `${row.id}: ${row.load.errorSamples.join(' | ')}\n${results.meta.notes.join('\n')}`;
      expect(row.load.errors, why).toBe(0);
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
      if (!row.round) expect(row.rssMb!.peak, row.id).toBeGreaterThan(20); // the rounds follow CPU only
      if (row.target !== 'gateway-postgres') continue;
      expect(row.cpuPercent.postgres, row.id).toBeDefined();
      // Every answer's end waits for its charge's commit: every timed row shows the database working. The quick
      // run's stream bursts (50 calls in half a second, their charges in a few grouped commits) can spend less than
      // one clock tick of PostgreSQL's CPU, which /proc then reads as 0.
      if (!row.what.startsWith('slow-streams')) expect(row.cpuPercent.postgres, row.id).toBeGreaterThan(0);
    }
    const soak = results.rows.find((r) => r.what === 'soak');
    if (withPostgres) expect(soak!.rssMb!.samples.length).toBeGreaterThanOrEqual(4);
  });

  it('checks every target, and says so in the Markdown', () => {
    // The twelve, whatever the run had: a target without its inputs is there, not measured.
    expect(results.targets.length).toBe(12);
    for (const t of results.targets) {
      // Every target reads the gateway on PostgreSQL (the PGlite one as its denominator), and says so.
      const needsPeer = /\bpeer\b/.test(t.name);
      const needsPostgres = /PostgreSQL/.test(t.name);
      expect(needsPostgres, t.name).toBe(true);
      if (needsPeer || (needsPostgres && !withPostgres)) expect(t.pass, t.name).toBeNull();
      else expect(typeof t.pass, t.name).toBe('boolean');
      const verdict = t.pass === null ? 'NOT MEASURED' : t.pass ? 'PASS' : 'MISS';
      expect(markdown).toContain(`| ${t.name} |`);
      expect(markdown.split('\n').find((l) => l.startsWith(`| ${t.name} |`))).toContain(verdict);
    }
    expect(output).toContain('### Targets');
    expect(markdown).toContain('### CPU per answered call');
  });
});

describe('bench target arithmetic', () => {
  // One second's load: a row at `perSecond` answered that many calls (100 where the rate does not matter).
  const load = (perSecond: number, p50 = 1, p99 = 2, errors = 0): LoadResult => ({
    ok: perSecond > 0 ? perSecond : 100,
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
    return {
      id,
      target,
      what,
      stream: mode === 'stream',
      connections: Number(c!.slice(1)),
      wallet: spread ? 'spread' : target!.startsWith('gateway') ? 'hot' : 'none',
      load: l,
      cpuPercent: {},
      ...extra,
    } as Row;
  };
  const find = (checks: ReturnType<typeof targetChecks>, name: string) => checks.find((c) => c.name === name)!;

  const cpu = (r: Row, cpuPercent: Record<string, number>): Row => ({ ...r, cpuPercent });
  const T = {
    peer: 'vendor B c32, PostgreSQL: req/s vs peer ≥ 3×',
    floor: 'vendor B c32, PostgreSQL: req/s vs floor ≥ 0.5×',
    cpuFloor: "vendor B c32, PostgreSQL: gateway CPU per call vs floor's ≤ 2×",
    cpuPeer: "vendor B c32, PostgreSQL: gateway CPU per call vs peer's ≤ 0.25×",
    cpuPostgres: "vendor B c32, PostgreSQL: PostgreSQL CPU per call vs gateway's ≤ 0.15×",
    p50: "vendor B c1, PostgreSQL: added p50 vs peer's added p50 ≤ 1×",
    p99: "vendor B c1, PostgreSQL: added p99 vs peer's added p99 ≤ 0.5×",
    ttfb: "vendor B stream c1, PostgreSQL: TTFB p50 minus the floor's TTFB p50 (raw TTFB) ≤ 0.3 ms",
    slowWall: '1000 concurrent slow streams, PostgreSQL: wall time vs direct ≤ 1.2×',
    slowRss: '1000 concurrent slow streams, PostgreSQL: gateway peak RSS ≤ 250 MB',
    pglite: 'vendor B c32: PGlite req/s vs PostgreSQL ≥ 0.6×',
    rows: 'vendor B c32, PostgreSQL: rows written per answered call ≤ 1.5',
  };
  const stream = (ttfbP50: number): LoadResult => ({ ...load(0, ttfbP50 + 1, ttfbP50 + 2), ttfbMs: { p50: ttfbP50, p99: ttfbP50 + 1 } });
  const slow = (wallMs: number): LoadResult => ({ ...load(0), ok: 1000, wallMs });
  const rssMb = (peak: number) => ({ rssMb: { start: 60, end: 60, peak, hwm: peak, samples: [] } });

  /**
   * One run's rows, every target's inputs present, each within its limit unless told otherwise. CPU per call
   * = % of a core × seconds / answered: a 1-second row at 2,000 req/s and 80 % CPU spends 0.4 ms a call.
   */
  const runRows = (
    o: {
      gw32?: number;
      gwCpu?: number;
      pgCpu?: number;
      floorCpu?: number;
      peerCpu?: number;
      gw1?: [number, number];
      gwTtfb?: number;
      slowWall?: number;
      slowRss?: number;
      pglite32?: number;
      rowsPerCall?: number;
    } = {},
  ) => [
    row('direct/chat-b/plain/c32', load(10_000)),
    cpu(row('floor/chat-b/plain/c32', load(4_000)), { floor: o.floorCpu ?? 100, stub: 30 }),
    cpu(row('peer/chat-b/plain/c32', load(500)), { peer: o.peerCpu ?? 100, stub: 5 }),
    cpu(row('gateway-postgres/chat-b/plain/c32', load(o.gw32 ?? 2_000), { dbRowsWritten: (o.gw32 ?? 2_000) * (o.rowsPerCall ?? 1.2) }), {
      'gateway-postgres': o.gwCpu ?? 80,
      postgres: o.pgCpu ?? 5,
      stub: 20,
    }),
    row('gateway-pglite/chat-b/plain/c32', load(o.pglite32 ?? 1_200)),
    row('direct/chat-b/plain/c1', load(0, 0.2, 0.5)),
    row('peer/chat-b/plain/c1', load(0, 1.2, 4.5)),
    row('gateway-postgres/chat-b/plain/c1', load(0, ...(o.gw1 ?? [0.45, 2.0]))),
    row('floor/chat-b/stream/c1', stream(0.5)),
    row('gateway-postgres/chat-b/stream/c1', stream(o.gwTtfb ?? 0.7)),
    row('direct/slow-streams/stream/c1000', slow(5_100)),
    row('gateway-postgres/slow-streams/stream/c1000', slow(o.slowWall ?? 5_500), rssMb(o.slowRss ?? 180)),
  ];

  it('passes every target when the gateway is within every limit, and says by how much', () => {
    const checks = targetChecks({ rows: runRows() });
    expect(checks.map((c) => c.name)).toEqual(Object.values(T));
    expect(find(checks, T.peer)).toMatchObject({ value: 4, pass: true, by: '1.333x the limit' });
    expect(find(checks, T.floor)).toMatchObject({ value: 0.5, pass: true });
    // Gateway 80 % over 2,000 calls: 0.4 ms a call; floor 100 % over 4,000: 0.25 ms; peer 100 % over 500: 2 ms.
    expect(find(checks, T.cpuFloor).value).toBeCloseTo(1.6);
    expect(find(checks, T.cpuFloor).pass).toBe(true);
    expect(find(checks, T.cpuPeer).value).toBeCloseTo(0.2);
    expect(find(checks, T.cpuPeer).pass).toBe(true);
    // PostgreSQL 5 % over the gateway's 2,000 calls: 0.025 ms a call, 1/16 of the gateway's.
    expect(find(checks, T.cpuPostgres).value).toBeCloseTo(0.0625);
    expect(find(checks, T.cpuPostgres).pass).toBe(true);
    // Added p50: gateway 0.25 ms, peer 1 ms; added p99: gateway 1.5 ms, peer 4 ms.
    expect(find(checks, T.p50).value).toBeCloseTo(0.25);
    expect(find(checks, T.p50).pass).toBe(true);
    expect(find(checks, T.p99).value).toBeCloseTo(0.375);
    expect(find(checks, T.p99).pass).toBe(true);
    expect(find(checks, T.ttfb).value).toBeCloseTo(0.2);
    expect(find(checks, T.ttfb)).toMatchObject({ pass: true, by: '-0.100 ms under the limit' });
    expect(find(checks, T.slowWall).value).toBeCloseTo(5_500 / 5_100);
    expect(find(checks, T.slowWall).pass).toBe(true);
    expect(find(checks, T.slowRss)).toMatchObject({ value: 180, pass: true });
    expect(find(checks, T.pglite)).toMatchObject({ value: 0.6, pass: true });
    expect(find(checks, T.rows).value).toBeCloseTo(1.2);
    expect(find(checks, T.rows).pass).toBe(true);
  });

  it('misses each target past its limit, ratios and CPU per call both ways', () => {
    const checks = targetChecks({
      rows: runRows({
        gw32: 1_000,
        gwCpu: 90,
        pgCpu: 20,
        gw1: [1.5, 3.0],
        gwTtfb: 0.85,
        slowWall: 6_500,
        slowRss: 260,
        pglite32: 400,
        rowsPerCall: 3.6,
      }),
    });
    expect(find(checks, T.peer)).toMatchObject({ value: 2, pass: false });
    expect(find(checks, T.floor)).toMatchObject({ value: 0.25, pass: false, by: '0.500x the limit' });
    // Gateway 90 % over 1,000 calls: 0.9 ms a call, 3.6× the floor's 0.25 ms and 0.45 of the peer's 2 ms;
    // PostgreSQL 20 % over the same calls: 0.2 ms, 0.22 of the gateway's.
    expect(find(checks, T.cpuFloor).value).toBeCloseTo(3.6);
    expect(find(checks, T.cpuFloor).pass).toBe(false);
    expect(find(checks, T.cpuPeer).value).toBeCloseTo(0.45);
    expect(find(checks, T.cpuPeer).pass).toBe(false);
    expect(find(checks, T.cpuPostgres).value).toBeCloseTo(0.2 / 0.9);
    expect(find(checks, T.cpuPostgres).pass).toBe(false);
    expect(find(checks, T.p50).value).toBeCloseTo(1.3);
    expect(find(checks, T.p50).pass).toBe(false);
    expect(find(checks, T.p99).value).toBeCloseTo(0.625);
    expect(find(checks, T.p99).pass).toBe(false);
    expect(find(checks, T.ttfb).value).toBeCloseTo(0.35);
    expect(find(checks, T.ttfb)).toMatchObject({ pass: false, by: '+0.050 ms over the limit' });
    expect(find(checks, T.slowWall).pass).toBe(false);
    expect(find(checks, T.slowRss)).toMatchObject({ value: 260, pass: false, by: '+10.0 MB over the limit' });
    expect(find(checks, T.pglite)).toMatchObject({ value: 0.4, pass: false });
    expect(find(checks, T.rows).value).toBeCloseTo(3.6);
    expect(find(checks, T.rows).pass).toBe(false);
  });

  it('leaves a target not measured when its inputs are missing: no peer, no PostgreSQL, no process CPU', () => {
    const noPeer = targetChecks({ rows: runRows().filter((r) => r.target !== 'peer') });
    for (const name of [T.peer, T.cpuPeer, T.p50, T.p99]) expect(find(noPeer, name).pass, name).toBeNull();
    for (const name of [T.floor, T.cpuFloor, T.cpuPostgres, T.ttfb, T.slowWall, T.slowRss, T.pglite, T.rows])
      expect(typeof find(noPeer, name).pass, name).toBe('boolean');
    const noPostgres = targetChecks({ rows: runRows().filter((r) => r.target !== 'gateway-postgres') });
    expect(noPostgres).toHaveLength(12);
    for (const c of noPostgres) expect(c.pass, c.name).toBeNull();
    expect(find(noPostgres, T.pglite).by).toBe('not measured');
    // A gateway row that did not watch PostgreSQL leaves that one target without its input.
    const unwatched = runRows().map((r) => (r.id === 'gateway-postgres/chat-b/plain/c32' ? cpu(r, { 'gateway-postgres': 80 }) : r));
    expect(find(targetChecks({ rows: unwatched }), T.cpuPostgres).pass).toBeNull();
    // A peer that adds nothing over direct leaves no ratio to take.
    const peerFree = runRows().map((r) => (r.id === 'peer/chat-b/plain/c1' ? row(r.id, load(0, 0.2, 0.5)) : r));
    expect(find(targetChecks({ rows: peerFree }), T.p50).pass).toBeNull();
  });

  it('reads the paired targets from the median of the rounds when the run has them, each round its own pair', () => {
    // Three rounds whose gateway CPU is 80, 120 and 100 % against the floor's 100 % (0.4, 0.6, 0.5 ms a call
    // against 0.25): 1.6×, 2.4×, 2.0×, median 2.0×; the run's own rows say 1.6× and are not what the target reads.
    const inRound = (r: Row, n: number): Row => ({ ...r, id: `${r.id}/round${n}`, round: n });
    const rounds = [80, 120, 100].flatMap((gwCpu, i) => runRows({ gwCpu }).map((r) => inRound(r, i + 1)));
    const checks = targetChecks({ rows: [...runRows(), ...rounds] });
    expect(find(checks, T.cpuFloor).value).toBeCloseTo(2.0);
    expect(find(checks, T.cpuFloor).pass).toBe(true);
    expect(find(checks, T.cpuFloor).by).toBe('1.000x the limit; the median of 3 rounds: 1.600, 2.400, 2.000');
    // A round is compared within itself: a floor spending twice the CPU in round 2 halves that round's ratio only.
    const slowFloor = rounds.map((r) => (r.id === 'floor/chat-b/plain/c32/round2' ? cpu(r, { floor: 200, stub: 30 }) : r));
    expect(find(targetChecks({ rows: [...runRows(), ...slowFloor] }), T.cpuFloor).value).toBeCloseTo(1.6);
    // A round whose row had errors drops out of the median; with none left the target is not measured.
    const erred = rounds.map((r) => (r.target === 'peer' && r.round === 1 ? { ...r, load: { ...r.load, errors: 3 } } : r));
    expect(find(targetChecks({ rows: [...runRows(), ...erred] }), T.p50).by).toContain('the median of 3 rounds: –, ');
    const noPeer = rounds.filter((r) => r.target !== 'peer');
    expect(find(targetChecks({ rows: [...runRows(), ...noPeer] }), T.cpuPeer).pass).toBeNull();
    // The targets that do not set two processes against each other still read the run's own rows.
    expect(find(checks, T.rows).value).toBeCloseTo(1.2);
    expect(median([3, null, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([null])).toBeNull();
  });

  it('takes CPU per call as % of a core × seconds / answered calls', () => {
    const r = cpu(row('gateway-postgres/chat-b/plain/c32', { ...load(1_500), ok: 3_000, seconds: 2 }), { 'gateway-postgres': 90 });
    expect(cpuMsPerCall(r, 'gateway-postgres')).toBeCloseTo(0.6);
    expect(cpuMsPerCall(r, 'postgres')).toBeUndefined();
    expect(cpuMsPerCall({ ...r, load: { ...r.load, errors: 1 } }, 'gateway-postgres')).toBeUndefined();
  });

  it('counts a row with errors as not measured, never as a pass', () => {
    const rows = runRows().map((r) => (r.id === 'gateway-postgres/chat-b/plain/c32' ? { ...r, load: { ...r.load, errors: 5 } } : r));
    const checks = targetChecks({ rows });
    for (const name of [T.peer, T.floor, T.cpuFloor, T.cpuPeer, T.cpuPostgres, T.pglite]) expect(find(checks, name).pass, name).toBeNull();
  });

  it('takes soak growth from the medians of the first and last tenth of the samples', () => {
    // A GC spike in the first tenth's neighbourhood moves nothing; 100 → 106 MB is 6 %.
    const samples = [100, 100, 300, 100, 100, 100, 100, 100, 100, 100, 106, 106, 106, 106, 106, 106, 106, 106, 106, 106];
    const soak = row('gateway-postgres/soak/plain/c32', load(1), { rssMb: { start: 100, end: 106, peak: 300, hwm: 300, samples } });
    expect(soakGrowthPercent(soak)).toBeCloseTo(6);
  });
});
