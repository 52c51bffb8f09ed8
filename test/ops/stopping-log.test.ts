// A call that reaches a gateway already stopping gets its 503 and is logged at warn: a deploy stops a gateway under
// load, and an error line for each such call would page an operator for every deploy (an attack helper saw one per
// refused call). A fault nobody chose is still logged at error.
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const lines: Record<string, unknown>[] = [];
const stream = { write: (line: string) => void lines.push(JSON.parse(line)) };

let t: TestGateway;
let closed: Promise<void> | null = null;
beforeAll(async () => {
  t = await startTestGateway({ logger: { level: 'info', stream } });
});
afterAll(() => closed ?? t?.close());

const call = (requestId: string, apiKey: string) => {
  const body = JSON.stringify({ model: 'b-5-mini', messages: [{ role: 'user', content: 'hi' }] });
  return (
    `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${apiKey}\r\ncontent-type: application/json\r\n` +
    `x-request-id: ${requestId}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
};

it('a call arriving while the gateway stops gets 503, logged at warn and not as a failure', async () => {
  // Two calls on one connection: the second is sent while the first is at the vendor and the gateway has begun to stop.
  t.sim.inject('b0', { kind: 'delay', ms: 600 });
  const url = new URL(t.url);
  const socket = connect(Number(url.port), url.hostname);
  let text = '';
  socket.on('data', (d) => {
    text += d.toString();
  });
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => {});
  socket.write(call('before-stop', t.apiKey));
  await new Promise((r) => setTimeout(r, 250));
  expect(t.received('b').length, 'the first call is at the vendor').toBe(1);
  closed = t.close();
  await new Promise((r) => setTimeout(r, 50));
  socket.write(call('after-stop', t.apiKey));
  await ended;
  await closed;

  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
  expect(statuses, text).toEqual([200, 503]);
  expect(text).toContain('The gateway is stopping. Nothing was charged; retry.');
  const refused = lines.filter((l) => l.requestId === 'after-stop');
  expect(
    refused.filter((l) => (l.level as number) >= 50),
    JSON.stringify(refused),
  ).toEqual([]);
  expect(
    refused.find((l) => l.msg === 'request refused'),
    JSON.stringify(refused),
  ).toMatchObject({ level: 40, status: 503 });
});
