// The bench's report: the targets of issue 9 item 6 checked against one run's rows (ratios within the run, so
// a loaded machine moves both sides), and the Markdown tables printed and written beside the JSON.
import { CALL_KINDS, CALL_LABEL, type CallKind } from './calls.ts';
import type { Row, TargetName } from './measure.ts';
import { rowId } from './measure.ts';

export interface BenchResults {
  meta: { startedAt: string; seconds: number; node: string; cores: number; loadAverageAtEnd: number; commit: string; config: Record<string, unknown>; notes: string[] };
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
const mode = (stream: boolean) => (stream ? 'stream' : 'plain');

function finder(rows: Row[]) {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const row = (target: TargetName, what: Row['what'], stream: boolean, c: number, wallet: Row['wallet'] = target.startsWith('gateway') ? 'hot' : 'none') =>
    byId.get(rowId(target, what, stream, c, wallet));
  return row;
}

const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !b ? null : a / b);

function check(name: string, value: number | null | undefined, direction: TargetCheck['direction'], limit: number, unit: TargetCheck['unit'] = ''): TargetCheck {
  if (value === null || value === undefined || Number.isNaN(value)) return { name, value: null, limit, direction, unit, pass: null, by: 'not measured' };
  const pass = direction === 'at least' ? value >= limit : value <= limit;
  const diff = value - limit;
  const by =
    unit === ''
      ? `${(value / limit).toFixed(3)}x the limit`
      : `${diff >= 0 ? '+' : ''}${diff.toFixed(unit === 'ms' ? 3 : 1)} ${unit} ${diff >= 0 ? 'over' : 'under'} the limit`;
  return { name, value, limit, direction, unit, pass, by };
}

export function targetChecks(results: Pick<BenchResults, 'rows'>): TargetCheck[] {
  const row = finder(results.rows);
  const rps = (r: Row | undefined) => (r && r.load.errors === 0 ? r.load.perSecond : undefined);
  const checks: TargetCheck[] = [];
  const b32 = rps(row(GW, 'chat-b', false, 32));
  checks.push(check('B passthrough, 32 conn, PostgreSQL: req/s vs peer', ratio(b32, rps(row('peer', 'chat-b', false, 32))), 'at least', 8));
  checks.push(check('B passthrough, 32 conn, PostgreSQL: req/s vs direct', ratio(b32, rps(row('direct', 'chat-b', false, 32))), 'at least', 0.2));
  // The same call through GATEWAY_WORKERS processes (one per core unless BENCH_WORKERS says), when the run has them.
  const workers32 = rps(row('gateway-postgres-workers', 'chat-b', false, 32));
  if (workers32 !== undefined) {
    checks.push(check('B passthrough, 32 conn, PostgreSQL, GATEWAY_WORKERS: req/s vs peer', ratio(workers32, rps(row('peer', 'chat-b', false, 32))), 'at least', 8));
    checks.push(check('B passthrough, 32 conn, PostgreSQL, GATEWAY_WORKERS: req/s vs direct', ratio(workers32, rps(row('direct', 'chat-b', false, 32))), 'at least', 0.2));
  }
  for (const what of CALL_KINDS) {
    const gw = row(GW, what, false, 1);
    const direct = row('direct', what, false, 1);
    const added = (q: 'p50' | 'p99') => (gw && direct && gw.load.errors === 0 ? gw.load.latencyMs[q] - direct.load.latencyMs[q] : null);
    checks.push(check(`${CALL_LABEL[what]}, 1 conn: added p50`, added('p50'), 'at most', 0.5, 'ms'));
    checks.push(check(`${CALL_LABEL[what]}, 1 conn: added p99`, added('p99'), 'at most', 2, 'ms'));
  }
  for (const what of CALL_KINDS) {
    const gw = row(GW, what, true, 1);
    const direct = row('direct', what, true, 1);
    const added = gw?.load.ttfbMs && direct?.load.ttfbMs && gw.load.errors === 0 ? gw.load.ttfbMs.p50 - direct.load.ttfbMs.p50 : null;
    checks.push(check(`${CALL_LABEL[what]} stream, 1 conn: added time to first byte p50`, added, 'at most', 0.5, 'ms'));
  }
  for (const stream of [false, true]) {
    checks.push(check(`A translated vs B passthrough, 32 conn ${mode(stream)}: req/s`, ratio(rps(row(GW, 'chat-a', stream, 32)), rps(row(GW, 'chat-b', stream, 32))), 'at least', 0.9));
  }
  for (const db of ['gateway-postgres', 'gateway-pglite'] as const) {
    checks.push(check(`hot wallet vs 100 wallets (${db}): req/s`, ratio(rps(row(db, 'chat-b', false, 32)), rps(row(db, 'chat-b', false, 32, 'spread'))), 'at least', 0.8));
  }
  checks.push(check('PGlite vs PostgreSQL, B passthrough 32 conn: req/s', ratio(rps(row('gateway-pglite', 'chat-b', false, 32)), b32), 'at least', 0.5));
  const slowN = results.rows.find((r) => r.what === 'slow-streams')?.connections ?? 0;
  const slowGw = row(GW, 'slow-streams', true, slowN);
  const slowDirect = row('direct', 'slow-streams', true, slowN);
  const slowOk = slowGw && slowGw.load.errors === 0 ? slowGw : undefined;
  checks.push(check(`${slowN} concurrent slow streams: wall time vs direct`, ratio(slowOk?.load.wallMs, slowDirect?.load.wallMs), 'at most', 1.2));
  checks.push(check(`${slowN} concurrent slow streams: gateway peak RSS`, slowOk?.rssMb?.peak, 'at most', 250, 'MB'));
  const soak = results.rows.find((r) => r.target === GW && r.what === 'soak');
  checks.push(check('soak: RSS growth', soak && soak.load.errors === 0 ? soakGrowthPercent(soak) : null, 'at most', 5, '%'));
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

export function renderMarkdown(results: BenchResults): string {
  const { rows, meta } = results;
  const row = finder(rows);
  const out: string[] = [];
  out.push(`## npm run bench, ${meta.startedAt} (commit ${meta.commit}, Node ${meta.node}, ${meta.cores} cores, load average at end ${meta.loadAverageAtEnd.toFixed(2)})`);
  out.push('');
  out.push(`${meta.config.seconds} s per row; full billing (auth, reservation, settlement) on every gateway call; CPU is % of one core per process over the row.`);
  for (const n of meta.notes) out.push(`Note: ${n}`);

  out.push('', '### 1 connection: latency (ms)', '');
  out.push('| call | target | p50 | p99 | added p50 | added p99 | TTFB p50 | added TTFB p50 | errors | CPU % |', '|---|---|---|---|---|---|---|---|---|---|');
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

  out.push('', '### 32 connections: throughput', '');
  out.push('| call | target | req/s | vs direct | vs peer | p50 ms | p99 ms | errors | CPU % |', '|---|---|---|---|---|---|---|---|---|');
  for (const what of CALL_KINDS) {
    for (const stream of [false, true]) {
      const direct = row('direct', what, stream, 32)?.load.perSecond;
      const peer = row('peer', what, stream, 32)?.load.perSecond;
      for (const r of rows.filter((x) => x.what === what && x.stream === stream && x.connections === 32)) {
        const l = r.load;
        const name = `${r.target}${r.wallet === 'spread' ? ', 100 wallets' : r.wallet === 'hot' ? ', hot wallet' : ''}`;
        out.push(`| ${label(what, stream)} | ${name} | ${l.perSecond.toFixed(0)} | ${f(ratio(l.perSecond, direct), 3)} | ${r.target === 'peer' ? '' : f(ratio(l.perSecond, peer))} | ${f(l.latencyMs.p50)} | ${f(l.latencyMs.p99)} | ${l.errors} | ${cpu(r)} |`);
      }
    }
  }

  const slow = rows.filter((r) => r.what === 'slow-streams' || r.what === 'slow-streams-cold');
  if (slow.length) {
    const direct = (what: Row['what']) => slow.find((r) => r.target === 'direct' && r.what === what);
    out.push('', `### ${slow[0]!.connections} concurrent slow streams (${meta.config.slow ? JSON.stringify(meta.config.slow) : ''})`, '');
    out.push('Each target gets the same burst twice: the first opens every connection (to the vendor too), the second is the row the target reads.', '');
    out.push('| target | burst | wall s | vs direct (same burst) | TTFB p50 ms | RSS before MB | peak RSS MB (sampled) | RSS high-water MB | errors | CPU % |', '|---|---|---|---|---|---|---|---|---|---|');
    for (const r of slow) {
      const burst = r.what === 'slow-streams-cold' ? 'first' : 'second';
      out.push(`| ${r.target} | ${burst} | ${f(r.load.wallMs / 1000)} | ${f(ratio(r.load.wallMs, direct(r.what)?.load.wallMs), 3)} | ${f(r.load.ttfbMs?.p50)} | ${f(r.rssMb?.start, 0)} | ${f(r.rssMb?.peak, 0)} | ${f(r.rssMb?.hwm, 0)} | ${r.load.errors} | ${cpu(r)} |`);
    }
  }

  for (const soak of rows.filter((r) => r.what === 'soak')) {
    out.push('', `### Soak: ${soak.target}, all six calls mixed, 32 connections, ${f(soak.load.seconds, 0)} s`, '');
    out.push('| req/s | errors | RSS start MB | RSS end MB | peak MB | growth % | CPU % |', '|---|---|---|---|---|---|---|');
    out.push(`| ${soak.load.perSecond.toFixed(0)} | ${soak.load.errors} | ${f(soak.rssMb?.start, 0)} | ${f(soak.rssMb?.end, 0)} | ${f(soak.rssMb?.peak, 0)} | ${f(soakGrowthPercent(soak), 1)} | ${cpu(soak)} |`);
  }

  out.push('', '### Targets', '');
  out.push('| target | value | limit | result |', '|---|---|---|---|');
  for (const c of results.targets) {
    const verdict = c.pass === null ? 'NOT MEASURED' : c.pass ? 'PASS' : 'MISS';
    out.push(`| ${c.name} | ${c.value === null ? '–' : `${f(c.value, c.unit === '' ? 3 : 2)}${c.unit ? ' ' + c.unit : ''}`} | ${c.direction} ${c.limit}${c.unit ? ' ' + c.unit : ''} | ${verdict}: ${c.by} |`);
  }
  return out.join('\n');
}

const label = (what: CallKind, stream: boolean) => `${CALL_LABEL[what]}${stream ? ', stream' : ''}`;
