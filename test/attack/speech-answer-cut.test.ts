// Attack: speech whose vendor fails around its bytes. Before, the audio's charge was written before its first byte
// was read: a vendor that sent its head and then nothing answered the client 503 and charged it in full, and a body
// cut half-way, empty, or a JSON error under a 200 went to the client as audio, charged. Now a vendor that fails
// before any byte reached the client leaves the next route to answer, nothing charged for it; one that breaks off
// later cuts the client's answer, charged nothing; only audio relayed whole is charged.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

type Mode = 'good' | 'head-then-reset' | 'one-chunk-then-reset' | 'cut-half-way' | 'empty' | 'json-error' | 'ndjson-error';
const AUDIO = Buffer.alloc(64 * 1024, 7);
const INPUT = '안녕하세요, 오늘의 과학 시간입니다.';
const COST = BigInt([...INPUT].length * 30_000); // tts-1-hd: $30 per million characters

/** A vendor B that answers each speech request as the next queued mode says (then `good`), counting what it was asked. */
function fakeVendor(queue: Mode[], asked: string[]): Server {
  return createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const mode = queue.shift() ?? 'good';
      asked.push(`${req.url} ${mode}`);
      if (mode === 'json-error' || mode === 'ndjson-error') {
        // An error under a 200, as JSON or in a type no deny-list names (found by an attack: relayed as audio, charged).
        res.writeHead(200, { 'content-type': mode === 'json-error' ? 'application/json' : 'application/x-ndjson' });
        res.end('{"error":{"message":"oops"}}');
      } else if (mode === 'empty') {
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': '0' });
        res.end();
      } else if (mode === 'good') {
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(AUDIO.length) });
        res.end(AUDIO);
      } else {
        // Pieces 40 ms apart, so the gateway has each before the next: its first is held, the second lets it go out.
        const pieces = { 'head-then-reset': 0, 'one-chunk-then-reset': 1, 'cut-half-way': 2 }[mode];
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(AUDIO.length) });
        res.flushHeaders();
        for (let i = 0; i < pieces; i++) setTimeout(() => res.write(AUDIO.subarray(i * 1024, (i + 1) * 1024)), 40 * (i + 1));
        setTimeout(() => res.socket?.destroy(), 40 * (pieces + 1) + 40);
      }
    });
  });
}

let vendor: Server;
let t: TestGateway;
const queue: Mode[] = [];
const asked: string[] = [];

beforeAll(async () => {
  vendor = fakeVendor(queue, asked);
  await new Promise<void>((r) => vendor.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
  t = await startTestGateway({ env: { GATEWAY_VENDOR_B_URLS: `${base}/r/0,${base}/r/1` } });
});
afterAll(async () => {
  await t?.close();
  await new Promise((r) => vendor?.close(r));
});
beforeEach(() => {
  queue.length = 0;
  asked.length = 0;
});

const speak = () => post(t, '/v1/audio/speech', { model: 'tts-1-hd', input: INPUT, voice: 'alloy' });

/** The call, its body read to the end (or to where it broke), and what the wallet paid for it once nothing is held. */
async function paidFor(): Promise<{ res: Response; bytes: number | null; paid: bigint }> {
  const before = await t.balance();
  const res = await speak();
  const bytes = await res.arrayBuffer().then(
    (b) => b.byteLength,
    () => null,
  );
  for (let i = 0; i < 100 && (await t.held()) !== 0n; i++) await new Promise((r) => setTimeout(r, 20));
  expect(await t.held()).toBe(0n);
  return { res, bytes, paid: before - (await t.balance()) };
}

describe('speech whose vendor fails around its bytes', () => {
  it.each(['head-then-reset', 'one-chunk-then-reset', 'empty', 'json-error', 'ndjson-error'] as const)(
    '%s on the first route: the second answers, charged once',
    async (mode) => {
      queue.push(mode);
      const { res, bytes, paid } = await paidFor();
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      expect(bytes).toBe(AUDIO.length);
      expect(res.headers.get('x-service-charged-nano')).toBe(String(COST));
      expect(paid).toBe(COST);
      expect(asked).toEqual([`/r/0/v1/audio/speech ${mode}`, '/r/1/v1/audio/speech good']);
    },
  );

  it('every route fails before its first byte: 502, nothing charged', async () => {
    queue.push('head-then-reset', 'json-error');
    const { res, paid } = await paidFor();
    expect(res.status).toBe(502);
    expect(res.headers.get('x-service-charged-nano')).toBeNull();
    expect(paid).toBe(0n);
  });

  it('a body cut half-way cuts the client’s answer, and charges nothing', async () => {
    queue.push('cut-half-way');
    const { res, bytes, paid } = await paidFor();
    expect(res.status).toBe(200);
    expect(bytes).toBeNull(); // the client can tell its audio is not whole
    expect(paid).toBe(0n);
    expect(asked).toHaveLength(1); // bytes reached the client: no other route is asked
  });

  it('audio relayed whole is charged what its header says', async () => {
    const { res, bytes, paid } = await paidFor();
    expect(res.status).toBe(200);
    expect(bytes).toBe(AUDIO.length);
    expect(paid).toBe(COST);
    expect(res.headers.get('x-service-charged-nano')).toBe(String(COST));
  });
});
