// One row under the profiler: the gateway on PostgreSQL (PROFILE_DB=pglite: on PGlite) with `--cpu-prof`,
// vendor B chat at PROFILE_CONNECTIONS (32) for PROFILE_SECONDS (8), streamed with PROFILE_STREAM=1, then the hottest
// functions by self time. For finding what a row's CPU goes to.
//   node --import tsx bench/profile.ts        (GATEWAY_CONFIG_DIR picks the config, leases on or off)
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callRequests } from './calls.ts';
import { startLoadClient } from './load-client.ts';
import { startGatewayOnPglite, startGatewayOnPostgres, startStub } from './targets.ts';

const seconds = Number(process.env.PROFILE_SECONDS ?? 8);
const connections = Number(process.env.PROFILE_CONNECTIONS ?? 32);
const dir = mkdtempSync(join(tmpdir(), 'gw-prof-'));
const stub = await startStub();
process.env.BENCH_GATEWAY_NODE_ARGS = `--cpu-prof --cpu-prof-interval=${process.env.PROFILE_INTERVAL_US ?? 1000} --cpu-prof-dir=${dir}`;
const slow = { chunks: 10, delayMs: 10 };
const gw =
  process.env.PROFILE_DB === 'pglite'
    ? await startGatewayOnPglite(stub.url, slow, 0)
    : await startGatewayOnPostgres(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test', stub.url, slow, 0);
const load = startLoadClient();
const requests = callRequests('gateway', 'chat-b', process.env.PROFILE_STREAM === '1', { stubUrl: stub.url, keys: [gw.hotKey] });
await load.run({ url: gw.url, mode: 'closed', requests, connections: 32, seconds: 1 }, 30_000); // warm up
const r = await load.run({ url: gw.url, mode: 'closed', requests, connections, seconds }, (seconds + 30) * 1000);
console.log(
  `${r.perSecond.toFixed(0)} req/s, ${r.errors} errors, p50 ${r.latencyMs.p50.toFixed(2)} ms, p99 ${r.latencyMs.p99.toFixed(2)} ms`,
);
await load.close();
await gw.stop();
await stub.stop();

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = readdirSync(dir).find((f) => f.includes(`.${gw.pid}.`));
if (!file) throw new Error(`no profile of ${gw.pid} in ${dir}`);
const prof = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const self = new Map<number, number>();
prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const byFn = new Map<string, number>();
for (const n of prof.nodes) {
  const f = n.callFrame;
  const where = f.url.replace(/^.*\/(node_modules\/|engine\/|transforms\/)/, '$1');
  const key = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}`;
  byFn.set(key, (byFn.get(key) ?? 0) + (self.get(n.id) ?? 0));
}
for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PROFILE_TOP ?? 40)))
  console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
console.log(`profile: ${join(dir, file)}`);
