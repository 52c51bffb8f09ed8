// HTTP/2 to a vendor against HTTP/1.1, over TLS: through the gateway on PostgreSQL to the stub served over https
// (HTTP/2 or HTTP/1.1 by ALPN), with vendors.yaml `http2` off and on (vendors B and E):
// - 1,000 concurrent slow streams (BENCH_SLOW_STREAMS) to vendor E, twice (the second reuses the first's
//   connections, as the bench's slow row does): wall time, peak RSS, the gateway's CPU, the TLS connections
//   it opened to the vendor;
// - vendor B chat at 32 connections for BENCH_SECONDS (5): requests/s, p50, the gateway's CPU per call.
//   node --import tsx bench/vendor-http2.ts
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { callRequests, slowRequests } from './calls.ts';
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
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const lines: string[] = [
  '| vendor E over https | burst | wall s | peak RSS MB | gateway CPU % of a core | connections to the vendor |',
  '|---|---|---:|---:|---:|---:|',
];
const plain: string[] = ['| vendor B chat over https, 32 connections | req/s | p50 ms | gateway CPU µs per call |', '|---|---:|---:|---:|'];
try {
  for (const http2 of process.env.HTTP2_ORDER === 'on-first' ? [true, false] : [false, true]) {
    const dir = mkdtempSync(join(tmpdir(), 'gw-h2-config-'));
    cpSync(configDir, dir, { recursive: true });
    const vendors = join(dir, 'vendors.yaml');
    writeFileSync(vendors, readFileSync(vendors, 'utf8').replace(/^([be]):\n/gm, `$1:\n  http2: ${http2}\n`));
    process.env.GATEWAY_CONFIG_DIR = dir;
    const gw = await startGatewayOnPostgres(serverUrl, stub.url, slow, 0);
    try {
      const requests = slowRequests('gateway', slow, { stubUrl: stub.url, keys: [gw.hotKey] });
      for (const burst of ['cold', 'warm']) {
        const row = await measure(
          load,
          {
            target: 'gateway-postgres',
            what: 'slow-streams',
            stream: true,
            wallet: 'hot',
            url: gw.url,
            requests,
            connections: streams,
            burst: streams,
            rssEveryMs: 100,
          },
          { pids: { gateway: gw.pid }, memoryOf: gw.pid, withPostgres: false },
        );
        const ok = row.load.errors === 0 ? '' : ` (${row.load.errors} errors)`;
        lines.push(
          `| http2: ${http2} | ${burst} | ${(row.load.wallMs / 1000).toFixed(2)}${ok} | ${row.rssMb?.peak.toFixed(0)} | ${row.cpuPercent.gateway?.toFixed(0)} | ${connectionsTo(gw.pid, port)} |`,
        );
      }
      const chat = callRequests('gateway', 'chat-b', false, { stubUrl: stub.url, keys: [gw.hotKey] });
      await load.run({ url: gw.url, mode: 'closed', requests: chat, connections: 32, seconds: 1 }, 60_000);
      const row = await measure(
        load,
        { target: 'gateway-postgres', what: 'chat-b', stream: false, wallet: 'hot', url: gw.url, requests: chat, connections: 32, seconds },
        { pids: { gateway: gw.pid }, memoryOf: gw.pid, withPostgres: false },
      );
      const perCallUs = ((row.cpuPercent.gateway ?? 0) / 100 / row.load.perSecond) * 1e6;
      const ok = row.load.errors === 0 ? '' : ` (${row.load.errors} errors)`;
      plain.push(
        `| http2: ${http2} | ${row.load.perSecond.toFixed(0)}${ok} | ${row.load.latencyMs.p50.toFixed(2)} | ${perCallUs.toFixed(0)} |`,
      );
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
console.log(`\n${plain.join('\n')}`);
