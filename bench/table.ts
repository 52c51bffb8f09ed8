// The bench's report: the current issue's targets checked against one run's rows (ratios within the run, so a
// loaded machine moves both sides), and the Markdown tables printed and written beside the JSON.
import { CALL_KINDS, CALL_LABEL, type CallKind } from './calls.ts';
import type { Row, TargetName } from './measure.ts';
import { rowId } from './measure.ts';

export interface BenchResults {
  meta: {
    startedAt: string;
    seconds: number;
    node: string;
    cores: number;
    loadAverageAtEnd: number;
    commit: string;
    config: Record<string, unknown>;
    notes: string[];
  };
  rows: Row[];
  targets: TargetCheck[];
}

export interface TargetCheck {
  name: string;
  value: number | null;
  limit: number;
  /** value must be at least (ratios) or at most (latencies, memory, growth) the limit. */
  direction: 'at least' | 'at most';
  unit: '' | 'ms' | 'MB' | '%';
  pass: boolean | null;
  /** How far from the limit, in words: "+0.12 ms over", "1.6x the limit". */
  by: string;
}

const GW = 'gateway-postgres' as const;

/** Rows by what they measured: the run's own, or one round's of the paired rounds (rounds.ts). */
function finder(rows: Row[], round?: number) {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const row = (
    target: TargetName,
    what: Row['what'],
    stream: boolean,
    c: number,
    wallet: Row['wallet'] = target.startsWith('gateway') ? 'hot' : 'none',
  ) => byId.get(rowId(target, what, stream, c, wallet, round));
  return row;
}
type Finder = ReturnType<typeof finder>;

const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !b ? null : a / b);
/** A row's answers a second, when it answered without an error. */
const rps = (r: Row | undefined) => (r && r.load.errors === 0 ? r.load.perSecond : undefined);

function check(
  name: string,
  value: number | null | undefined,
  direction: TargetCheck['direction'],
  limit: number,
  unit: TargetCheck['unit'] = '',
  rounds?: readonly (number | null)[],
): TargetCheck {
  if (value === null || value === undefined || Number.isNaN(value))
    return { name, value: null, limit, direction, unit, pass: null, by: 'not measured' };
  const pass = direction === 'at least' ? value >= limit : value <= limit;
  const diff = value - limit;
  const by =
    unit === ''
      ? `${(value / limit).toFixed(3)}x the limit`
      : `${diff >= 0 ? '+' : ''}${diff.toFixed(unit === 'ms' ? 3 : 1)} ${unit} ${diff >= 0 ? 'over' : 'under'} the limit`;
  const among = rounds?.length ? `; the median of ${rounds.length} rounds: ${rounds.map((x) => f(x, 3)).join(', ')}` : '';
  return { name, value, limit, direction, unit, pass, by: `${by}${among}` };
}

/** The middle value (the mean of the middle two), of those measured; null when none was. */
export function median(xs: readonly (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null && !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/**
 * CPU milliseconds one process spent per answered call over a row: its % of one core × the row's seconds / the
 * calls answered. Undefined when the row is missing, had errors, answered nothing, or did not watch the process.
 */
export function cpuMsPerCall(r: Row | undefined, process: string): number | undefined {
  if (r?.load.errors !== 0 || !r.load.ok) return undefined;
  const pct = r.cpuPercent[process];
  return pct === undefined ? undefined : ((pct / 100) * r.load.seconds * 1000) / r.load.ok;
}

/**
 * The issue's targets, in its order. Each ratio is within the run; every target names what it measures and its
 * limit, and a target whose inputs the run lacks (no peer, no floor, no PostgreSQL, a row with errors) is not
 * measured. "Added" latency is the row's minus direct's, for the gateway and the peer alike.
 */
/**
 * What sets the gateway against another process, from one set of rows: throughput and CPU per call at 32
 * connections, and what one connection adds to a call against what the peer adds ("added": a row's latency minus
 * direct's). A peer that adds nothing (or less than nothing, noise) leaves no latency ratio to take.
 */
function pairedFigures(row: Finder) {
  const gw32 = row(GW, 'chat-b', false, 32);
  const peer32 = row('peer', 'chat-b', false, 32);
  const floor32 = row('floor', 'chat-b', false, 32);
  const gwCpu = cpuMsPerCall(gw32, GW);
  const direct1 = row('direct', 'chat-b', false, 1);
  const added = (target: TargetName, q: 'p50' | 'p99') => {
    const r = row(target, 'chat-b', false, 1);
    return r && direct1 && r.load.errors === 0 && direct1.load.errors === 0 ? r.load.latencyMs[q] - direct1.load.latencyMs[q] : undefined;
  };
  const addedRatio = (q: 'p50' | 'p99') => {
    const gw = added(GW, q);
    const peer = added('peer', q);
    return gw === undefined || peer === undefined || peer <= 0 ? null : gw / peer;
  };
  return {
    peer: ratio(rps(gw32), rps(peer32)),
    floor: ratio(rps(gw32), rps(floor32)),
    cpuFloor: ratio(gwCpu, cpuMsPerCall(floor32, 'floor')),
    cpuPeer: ratio(gwCpu, cpuMsPerCall(peer32, 'peer')),
    cpuPostgres: ratio(cpuMsPerCall(gw32, 'postgres'), gwCpu),
    p50: addedRatio('p50'),
    p99: addedRatio('p99'),
  };
}
type PairedFigure = keyof ReturnType<typeof pairedFigures>;

/**
 * The issue's targets, in its order. Each ratio is within the run; every target names what it measures and its
 * limit, and a target whose inputs the run lacks (no peer, no floor, no PostgreSQL, a row with errors) is not
 * measured. The targets that set the gateway against another process read the median of the paired rounds when
 * the run has them (rounds.ts), else the run's own rows.
 */
export function targetChecks(results: Pick<BenchResults, 'rows'>): TargetCheck[] {
  const row = finder(results.rows);
  const checks: TargetCheck[] = [];
  const own = pairedFigures(row);
  const rounds = [...new Set(results.rows.flatMap((r) => (r.round ? [r.round] : [])))].sort((a, b) => a - b);
  const perRound = rounds.map((n) => pairedFigures(finder(results.rows, n)));
  const paired = (name: string, figure: PairedFigure, direction: TargetCheck['direction'], limit: number) => {
    if (perRound.length === 0) return check(name, own[figure], direction, limit);
    const values = perRound.map((p) => p[figure]);
    return check(name, median(values), direction, limit, '', values);
  };
  const gw32 = row(GW, 'chat-b', false, 32);

  // 1. Vendor B chat at 32 connections on PostgreSQL: throughput against the peer and the floor.
  checks.push(paired('vendor B c32, PostgreSQL: req/s vs peer ≥ 3×', 'peer', 'at least', 3));
  checks.push(paired('vendor B c32, PostgreSQL: req/s vs floor ≥ 0.5×', 'floor', 'at least', 0.5));

  // 2. CPU per answered call over the same rows: each process against the one it is compared with.
  checks.push(paired("vendor B c32, PostgreSQL: gateway CPU per call vs floor's ≤ 2×", 'cpuFloor', 'at most', 2));
  checks.push(paired("vendor B c32, PostgreSQL: gateway CPU per call vs peer's ≤ 0.25×", 'cpuPeer', 'at most', 0.25));
  checks.push(paired("vendor B c32, PostgreSQL: PostgreSQL CPU per call vs gateway's ≤ 0.15×", 'cpuPostgres', 'at most', 0.15));

  // 3. Latency at one connection: what the gateway adds to direct against what the peer adds.
  checks.push(paired("vendor B c1, PostgreSQL: added p50 vs peer's added p50 ≤ 1×", 'p50', 'at most', 1));
  checks.push(paired("vendor B c1, PostgreSQL: added p99 vs peer's added p99 ≤ 0.5×", 'p99', 'at most', 0.5));
  // Raw time to first byte against the floor's (direct's would cancel out of both sides anyway).
  const gwStream1 = row(GW, 'chat-b', true, 1);
  const floorStream1 = row('floor', 'chat-b', true, 1);
  const ttfbOverFloor =
    gwStream1?.load.ttfbMs && floorStream1?.load.ttfbMs && gwStream1.load.errors === 0 && floorStream1.load.errors === 0
      ? gwStream1.load.ttfbMs.p50 - floorStream1.load.ttfbMs.p50
      : null;
  checks.push(
    check("vendor B stream c1, PostgreSQL: TTFB p50 minus the floor's TTFB p50 (raw TTFB) ≤ 0.3 ms", ttfbOverFloor, 'at most', 0.3, 'ms'),
  );

  // 4. The slow streams' second burst (the first opens the connections; `slow-streams-cold`).
  const slowN = results.rows.find((r) => r.what === 'slow-streams')?.connections ?? 0;
  const slowGw = row(GW, 'slow-streams', true, slowN);
  const slowDirect = row('direct', 'slow-streams', true, slowN);
  const slowOk = slowGw && slowGw.load.errors === 0 ? slowGw : undefined;
  checks.push(
    check(
      `${slowN} concurrent slow streams, PostgreSQL: wall time vs direct ≤ 1.2×`,
      ratio(slowOk?.load.wallMs, slowDirect?.load.wallMs),
      'at most',
      1.2,
    ),
  );
  checks.push(check(`${slowN} concurrent slow streams, PostgreSQL: gateway peak RSS ≤ 250 MB`, slowOk?.rssMb?.peak, 'at most', 250, 'MB'));

  // 5. The embedded database against PostgreSQL.
  checks.push(
    check(
      'vendor B c32: PGlite req/s vs PostgreSQL ≥ 0.6×',
      ratio(rps(row('gateway-pglite', 'chat-b', false, 32)), rps(gw32)),
      'at least',
      0.6,
    ),
  );

  // 6. What one answered call costs the database in rows written, its background work included.
  const rowsPerCall = gw32?.dbRowsWritten !== undefined && gw32.load.ok ? gw32.dbRowsWritten / gw32.load.ok : null;
  checks.push(check('vendor B c32, PostgreSQL: rows written per answered call ≤ 1.5', rowsPerCall, 'at most', 1.5));
  return checks;
}

/** Median of the last tenth of the samples against the median of the first tenth (GC makes single samples jumpy). */
export function soakGrowthPercent(soak: Row): number | null {
  const s = soak.rssMb?.samples ?? [];
  if (s.length < 4) return null;
  const tenth = Math.max(1, Math.floor(s.length / 10));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const first = median(s.slice(0, tenth));
  return ((median(s.slice(-tenth)) - first) / first) * 100;
}

const f = (x: number | undefined | null, digits = 2) => (x === undefined || x === null || Number.isNaN(x) ? '–' : x.toFixed(digits));
const cpu = (r: Row) =>
  Object.entries(r.cpuPercent)
    .map(([name, pct]) => `${name} ${pct.toFixed(0)}`)
    .join(', ');
const targetsOf = (rows: Row[]) => [...new Set(rows.map((r) => r.target))];

const targetName = (r: Row) => `${r.target}${r.wallet === 'spread' ? ', 100 wallets' : r.wallet === 'hot' ? ', hot wallet' : ''}`;

function latencySection(rows: Row[]): string[] {
  const row = finder(rows);
  const out = ['', '### 1 connection: latency (ms)', ''];
  out.push(
    '| call | target | p50 | p99 | added p50 | added p99 | TTFB p50 | added TTFB p50 | errors | CPU % |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const what of CALL_KINDS) {
    for (const stream of [false, true]) {
      const direct = row('direct', what, stream, 1);
      for (const t of targetsOf(rows)) {
        const r = row(t, what, stream, 1);
        if (!r) continue;
        const d = t === 'direct' ? undefined : direct;
        const l = r.load;
        out.push(
          `| ${label(what, stream)} | ${t} | ${f(l.latencyMs.p50)} | ${f(l.latencyMs.p99)} | ${d ? f(l.latencyMs.p50 - d.load.latencyMs.p50) : ''} | ${d ? f(l.latencyMs.p99 - d.load.latencyMs.p99) : ''} | ${f(l.ttfbMs?.p50)} | ${d && l.ttfbMs && d.load.ttfbMs ? f(l.ttfbMs.p50 - d.load.ttfbMs.p50) : ''} | ${l.errors} | ${cpu(r)} |`,
        );
      }
    }
  }
  return out;
}

function throughputSection(rows: Row[]): string[] {
  const row = finder(rows);
  const out = ['', '### 32 connections: throughput', ''];
  out.push(
    '| call | target | req/s | vs direct | vs floor | vs peer | p50 ms | p99 ms | errors | CPU % |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const what of CALL_KINDS) {
    for (const stream of [false, true]) {
      const direct = row('direct', what, stream, 32)?.load.perSecond;
      const floor = row('floor', what, stream, 32)?.load.perSecond;
      const peer = row('peer', what, stream, 32)?.load.perSecond;
      for (const r of rows.filter((x) => x.what === what && x.stream === stream && x.connections === 32)) {
        const l = r.load;
        out.push(
          `| ${label(what, stream)} | ${targetName(r)} | ${l.perSecond.toFixed(0)} | ${f(ratio(l.perSecond, direct), 3)} | ${r.target === 'floor' ? '' : f(ratio(l.perSecond, floor), 3)} | ${r.target === 'peer' ? '' : f(ratio(l.perSecond, peer))} | ${f(l.latencyMs.p50)} | ${f(l.latencyMs.p99)} | ${l.errors} | ${cpu(r)} |`,
        );
      }
    }
  }
  return out;
}

/** The inputs of the CPU-per-call targets, for every target's vendor B row at 32 connections. */
function cpuSection(rows: Row[]): string[] {
  const b32 = rows.filter((r) => r.what === 'chat-b' && !r.stream && r.connections === 32);
  if (!b32.length) return [];
  const out = ['', '### CPU per answered call: vendor B chat, 32 connections (µs of CPU per call, per process)', ''];
  out.push('| target | answered | per process |', '|---|---|---|');
  for (const r of b32) {
    const per = Object.keys(r.cpuPercent)
      .map((p) => {
        const ms = cpuMsPerCall(r, p);
        return `${p} ${f(ms === undefined ? undefined : ms * 1000, 0)}`;
      })
      .join(', ');
    out.push(`| ${targetName(r)} | ${r.load.ok}${r.load.errors ? ` (${r.load.errors} errors)` : ''} | ${per} |`);
  }
  return out;
}

function slowStreamsSection(rows: Row[], meta: BenchResults['meta']): string[] {
  const slow = rows.filter((r) => r.what === 'slow-streams' || r.what === 'slow-streams-cold');
  if (!slow.length) return [];
  const direct = (what: Row['what']) => slow.find((r) => r.target === 'direct' && r.what === what);
  const out = ['', `### ${slow[0]!.connections} concurrent slow streams (${meta.config.slow ? JSON.stringify(meta.config.slow) : ''})`, ''];
  out.push(
    'Each target gets the same burst twice: the first opens every connection (to the vendor too), the second is the row the target reads.',
    '',
  );
  out.push(
    '| target | burst | wall s | vs direct (same burst) | TTFB p50 ms | RSS before MB | peak RSS MB (sampled) | RSS high-water MB | errors | CPU % |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of slow) {
    const burst = r.what === 'slow-streams-cold' ? 'first' : 'second';
    out.push(
      `| ${r.target} | ${burst} | ${f(r.load.wallMs / 1000)} | ${f(ratio(r.load.wallMs, direct(r.what)?.load.wallMs), 3)} | ${f(r.load.ttfbMs?.p50)} | ${f(r.rssMb?.start, 0)} | ${f(r.rssMb?.peak, 0)} | ${f(r.rssMb?.hwm, 0)} | ${r.load.errors} | ${cpu(r)} |`,
    );
  }
  return out;
}

function soakSection(rows: Row[]): string[] {
  const out: string[] = [];
  for (const soak of rows.filter((r) => r.what === 'soak')) {
    out.push('', `### Soak: ${soak.target}, all six calls mixed, 32 connections, ${f(soak.load.seconds, 0)} s`, '');
    out.push('| req/s | errors | RSS start MB | RSS end MB | peak MB | growth % | CPU % |', '|---|---|---|---|---|---|---|');
    out.push(
      `| ${soak.load.perSecond.toFixed(0)} | ${soak.load.errors} | ${f(soak.rssMb?.start, 0)} | ${f(soak.rssMb?.end, 0)} | ${f(soak.rssMb?.peak, 0)} | ${f(soakGrowthPercent(soak), 1)} | ${cpu(soak)} |`,
    );
  }
  return out;
}

function targetsSection(targets: BenchResults['targets']): string[] {
  const out = ['', '### Targets', ''];
  out.push('| target | value | limit | result |', '|---|---|---|---|');
  for (const c of targets) {
    const verdict = c.pass === null ? 'NOT MEASURED' : c.pass ? 'PASS' : 'MISS';
    out.push(
      `| ${c.name} | ${c.value === null ? '–' : `${f(c.value, c.unit === '' ? 3 : 2)}${c.unit ? ` ${c.unit}` : ''}`} | ${c.direction} ${c.limit}${c.unit ? ` ${c.unit}` : ''} | ${verdict}: ${c.by} |`,
    );
  }
  return out;
}

export function renderMarkdown(results: BenchResults): string {
  const { meta } = results;
  const rows = results.rows.filter((r) => !r.round);
  const out: string[] = [
    `## npm run bench, ${meta.startedAt} (commit ${meta.commit}, Node ${meta.node}, ${meta.cores} cores, load average at end ${meta.loadAverageAtEnd.toFixed(2)})`,
    '',
    `${meta.config.seconds} s per row; full billing (auth, reservation, settlement) on every gateway call; CPU is % of one core per process over the row.`,
  ];
  for (const n of meta.notes) out.push(`Note: ${n}`);
  out.push(
    ...latencySection(rows),
    ...throughputSection(rows),
    ...cpuSection(rows),
    ...slowStreamsSection(rows, meta),
    ...soakSection(rows),
  );
  out.push(...roundsTable(results.rows.filter((r) => r.round)));
  out.push(...targetsSection(results.targets));
  return out.join('\n');
}

/** The paired rounds' rows (rounds.ts), in the order they ran. */
function roundsTable(rounds: Row[]): string[] {
  if (rounds.length === 0) return [];
  const out = ['', '### Paired rounds: vendor B chat, each target in turn within a round', ''];
  out.push(
    '| round | target | connections | req/s | p50 ms | p99 ms | µs of CPU per call, per process | errors |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const r of rounds) {
    const per = Object.keys(r.cpuPercent)
      .map((p) => `${p} ${f((cpuMsPerCall(r, p) ?? Number.NaN) * 1000, 0)}`)
      .join(', ');
    const l = r.load;
    out.push(
      `| ${r.round} | ${r.target} | ${r.connections} | ${l.perSecond.toFixed(0)} | ${f(l.latencyMs.p50)} | ${f(l.latencyMs.p99)} | ${per} | ${l.errors} |`,
    );
  }
  return out;
}

const label = (what: CallKind, stream: boolean) => `${CALL_LABEL[what]}${stream ? ', stream' : ''}`;
