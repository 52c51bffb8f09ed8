// A client trickling its request cannot hold a connection: past limits.request_timeout_ms (headers and body)
// or limits.headers_timeout_ms (headers) the gateway answers 408 and closes it.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let t: TestGateway;
let tree: TempTree;
beforeAll(async () => {
  tree = tempCatalogTree();
  tree.edit('config/limits.yaml', (s) =>
    s.replace(/request_timeout_ms: \d+/, 'request_timeout_ms: 2000').replace(/headers_timeout_ms: \d+/, 'headers_timeout_ms: 1000'),
  );
  t = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog } });
});
afterAll(async () => {
  await t.close();
  tree.remove();
});

/** Sends `head` at once, then one byte every 300 ms; resolves with what came back and when the socket closed. */
function trickle(head: string): Promise<{ answer: string; closedAfterMs: number }> {
  const { port } = new URL(t.url);
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
    const drip = setInterval(() => socket.writable && socket.write('a'), 300);
    let answer = '';
    socket.on('data', (c) => (answer += c));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(drip);
      resolve({ answer, closedAfterMs: Date.now() - started });
    });
    setTimeout(() => socket.destroy(), 10_000);
  });
}

describe('request timeouts', () => {
  it('a body trickled in is cut off at the request timeout', async () => {
    const head =
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.apiKey}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"model":"`;
    const { answer, closedAfterMs } = await trickle(head);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(closedAfterMs).toBeLessThan(5000);
  });

  it('headers trickled in are cut off at the headers timeout', async () => {
    const { answer, closedAfterMs } = await trickle('GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(closedAfterMs).toBeLessThan(4000);
  });
});
