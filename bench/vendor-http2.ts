// HTTP/2 to a vendor against HTTP/1.1, over TLS: 1,000 concurrent slow streams (BENCH_SLOW_STREAMS) through the
// gateway on PostgreSQL to the stub served over https (HTTP/2 or HTTP/1.1 by ALPN), with vendors.yaml
// `http2` off and on. Each burst runs twice (the second reuses the first's connections, as the bench's slow
// row does); prints wall time, peak RSS, the gateway's CPU and the TLS connections it opened to the vendor.
//   node --import tsx bench/vendor-http2.ts
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { slowRequests } from './calls.ts';
import { startLoadClient } from './load-client.ts';
import { measure } from './measure.ts';
import { startGatewayOnPostgres, startStub } from './targets.ts';

const streams = Number(process.env.BENCH_SLOW_STREAMS ?? 1000);
const slow = { chunks: 50, delayMs: 100 }; // as the bench's slow row: 5 s each
const cert = resolve('test/fixtures/tls/cert.pem');
Object.assign(process.env, { STUB_TLS_CERT: cert, STUB_TLS_KEY: resolve('test/fixtures/tls/key.pem'), NODE_EXTRA_CA_CERTS: cert });
const configDir = process.env.GATEWAY_CONFIG_DIR ?? 'config';
const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Established TCP connections from the gateway process to the stub's port. */
function connectionsTo(pid: number, port: string): number {
  const out = execFileSync('ss', ['-tnpH', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(`pid=${pid},`)).length;
}

const stub = await startStub();
const port = new URL(stub.url).port;
const load = startLoadClient();
const lines: string[] = ['| vendor E over https | burst | wall s | peak RSS MB | gateway CPU % of a core | connections to the vendor |', '|---|---|---:|---:|---:|---:|'];
try {
  for (const http2 of [false, true]) {
    const dir = mkdtempSync(join(tmpdir(), 'gw-h2-config-'));
    cpSync(configDir, dir, { recursive: true });
    const vendors = join(dir, 'vendors.yaml');
    writeFileSync(vendors, readFileSync(vendors, 'utf8').replace(/^e:\n/m, `e:\n  http2: ${http2}\n`));
    process.env.GATEWAY_CONFIG_DIR = dir;
    const gw = await startGatewayOnPostgres(serverUrl, stub.url, slow, 0);
    try {
      const requests = slowRequests('gateway', slow, { stubUrl: stub.url, keys: [gw.hotKey] });
      for (const burst of ['cold', 'warm']) {
        const row = await measure(load, { target: 'gateway-postgres', what: 'slow-streams', stream: true, wallet: 'hot', url: gw.url, requests, connections: streams, burst: streams, rssEveryMs: 100 }, { pids: { gateway: gw.pid }, memoryOf: gw.pid, withPostgres: false });
        const ok = row.load.errors === 0 ? '' : ` (${row.load.errors} errors)`;
        lines.push(`| http2: ${http2} | ${burst} | ${(row.load.wallMs / 1000).toFixed(2)}${ok} | ${row.rssMb?.peak.toFixed(0)} | ${row.cpuPercent.gateway?.toFixed(0)} | ${connectionsTo(gw.pid, port)} |`);
      }
    } finally {
      await gw.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await load.close();
  await stub.stop();
}
console.log(`${streams} concurrent streams of ${slow.chunks} chunks ${slow.delayMs} ms apart\n`);
console.log(lines.join('\n'));
