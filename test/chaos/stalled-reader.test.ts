// A client that opens a big stream and stops reading must not make the gateway's memory grow with the stream:
// the gateway stops reading the vendor while the client's buffer is full (back-pressure). The gateway runs as
// a child process (its RSS is its own, not shared with the test runner) in front of a simulator in this
// process; the vendor's stream is ~1M events, hundreds of MB of frames if anyone buffered it.
import { readFileSync } from 'node:fs';
import { type ClientRequest, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

let sim: Simulator;
let gw: ChildGateway;
beforeAll(async () => {
  sim = await startSimulator();
  gw = await startChildGateway({ GATEWAY_VENDOR_B_URLS: sim.routeUrl('b0'), GATEWAY_VENDOR_B_KEY: 'vendor-b-secret', LOG_LEVEL: 'warn' });
}, 60_000);
afterAll(async () => {
  gw?.remove();
  await sim?.close();
});

const rssKb = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error('no VmRSS');
  return Number(m[1]);
};
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function chat(body: object, onResponse: (req: ClientRequest) => void): ClientRequest {
  const req = request(new URL('/v1/chat/completions', gw.base), {
    method: 'POST',
    agent: false,
    headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
  });
  req.on('response', (res) => {
    res.pause(); // never read: the bytes stay in the socket, then in the gateway if it does not stop
    onResponse(req);
  });
  req.on('error', () => undefined);
  req.end(JSON.stringify(body));
  return req;
}

describe('a stalled reader', () => {
  it('does not make the gateway’s memory grow with the stream', async () => {
    const pid = gw.child.pid!;
    // Warm up: one small call end to end, so the baseline includes the code paths a stream takes.
    const warm = await fetch(`${gw.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', stream: true, messages: [{ role: 'user', content: 'warm [[sim:long=2000]]' }] }),
    });
    expect(warm.status).toBe(200);
    await warm.text();
    await sleep(300);
    const baseline = rssKb(pid);

    let opened = false;
    const req = chat(
      { model: 'b-5', stream: true, messages: [{ role: 'user', content: 'big [[sim:long=1000000]]' }] },
      () => (opened = true),
    );
    for (let i = 0; i < 200 && !opened; i++) await sleep(20);
    expect(opened, 'the stream opened').toBe(true);
    const samples: number[] = [];
    for (let i = 0; i < 16; i++) {
      await sleep(250);
      samples.push(rssKb(pid));
    }
    const growthMb = (Math.max(...samples) - baseline) / 1024;
    const lateGrowthMb = (samples[samples.length - 1]! - samples[3]!) / 1024;
    console.log(
      `stalled reader: RSS baseline ${(baseline / 1024).toFixed(1)} MB, max ${(Math.max(...samples) / 1024).toFixed(1)} MB over 4 s`,
    );
    req.destroy();
    // The simulator writes this stream at ~17 MB/s to a client that reads (measured on this machine), so a
    // gateway that buffered for the stalled client would grow by ~70 MB in the 4 s window, more with string
    // overhead. Back-pressure keeps it to the socket buffers (a few MB measured).
    expect(growthMb).toBeLessThan(30);
    expect(lateGrowthMb, 'memory still rising while the reader stalls').toBeLessThan(15);
  }, 60_000);
});
