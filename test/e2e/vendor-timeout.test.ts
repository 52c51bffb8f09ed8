// A vendor that never answers: past the door's call_timeout_ms the client gets a 502 in the door's shape,
// nothing is charged or left held, and the gateway drops its request to the vendor (the time limit reaches
// the HTTP client, not only the code waiting on it), so a hung vendor does not keep a connection per call.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';
import { post } from './e2e.ts';

const CALL_TIMEOUT_MS = 600;

let vendor: Server;
let t: TestGateway;
let tree: TempTree;
const closedAfterMs: number[] = [];
let asked = 0;

beforeAll(async () => {
  vendor = createServer((req: IncomingMessage) => {
    asked++;
    const started = Date.now();
    req.resume();
    // Never answered: the only way this request ends is the gateway letting go of it.
    req.socket.on('close', () => closedAfterMs.push(Date.now() - started));
  });
  await new Promise<void>((r) => vendor.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
  tree = tempCatalogTree();
  tree.edit('config/limits.yaml', (s) => s.replace(/^( {2}chat:) \d+/m, `$1 ${CALL_TIMEOUT_MS}`));
  t = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog }, env: { GATEWAY_VENDOR_B_URLS: url } });
});
afterAll(async () => {
  await t?.close();
  vendor?.closeAllConnections();
  await new Promise((r) => vendor?.close(r));
  tree?.remove();
});

it('answers 502 at the time limit, charges nothing, holds nothing, and lets go of the vendor request', async () => {
  const before = await t.balance();
  const started = Date.now();
  const res = await post(t, '/v1/chat/completions', {
    model: 'b-5',
    messages: [{ role: 'user', content: 'hi' }],
    max_completion_tokens: 50,
  });
  const tookMs = Date.now() - started;

  expect(res.status).toBe(502);
  expect(((await res.json()) as { error: { type: string; message: string } }).error).toMatchObject({
    type: 'upstream_error',
    message: expect.stringMatching(/did not answer within 0.6 seconds/),
  });
  expect(tookMs).toBeGreaterThanOrEqual(CALL_TIMEOUT_MS - 50);
  expect(tookMs).toBeLessThan(CALL_TIMEOUT_MS + 3_000);

  expect(await t.balance()).toBe(before);
  expect(await t.held()).toBe(0n);

  expect(asked).toBe(1);
  await expect.poll(() => closedAfterMs.length, { timeout: 3_000 }).toBe(1);
  expect(closedAfterMs[0]).toBeLessThan(CALL_TIMEOUT_MS + 2_000);
});
