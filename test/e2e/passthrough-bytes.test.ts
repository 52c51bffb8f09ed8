// A passed-through answer (no answer transform on the door's protocol) reaches the client as the vendor's own
// bytes: not parsed and written again, which lost integers past 2^53 and the vendor's spacing. It is still
// read for its usage and charged. The vendor here is a stub answering one fixed body.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { nano, PRICES, post } from './e2e.ts';

const ANSWER =
  '{"id":"chatcmpl-fixed",  "object":"chat.completion","created":1763000000,"model":"b-5",' +
  '"seq":12345678901234567891,"price":1.50,' +
  '"choices":[{"index":0,"message":{"role":"assistant","content":"caf\\u00e9 \\ud83d\\ude00"},"finish_reason":"stop"}],' +
  '"usage":{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100}}';

let vendor: Server;
let t: TestGateway;
beforeAll(async () => {
  vendor = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER));
  });
  await new Promise<void>((r) => vendor.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
  t = await startTestGateway({ env: { GATEWAY_VENDOR_B_URLS: url } });
});
afterAll(async () => {
  await t?.close();
  await new Promise((r) => vendor?.close(r));
});

it('sends the vendor answer byte for byte, and charges its usage', async () => {
  const before = await t.balance();
  const res = await post(t, '/v1/chat/completions', {
    model: 'b-5',
    messages: [{ role: 'user', content: 'hi' }],
    max_completion_tokens: 200,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await res.text()).toBe(ANSWER);
  const cost = nano(1000, PRICES['b-5'].input) + nano(100, PRICES['b-5'].output);
  expect(BigInt(res.headers.get('x-service-charged-nano')!)).toBe(cost);
  expect(await t.balance()).toBe(before - cost);
});
