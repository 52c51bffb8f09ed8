// A key closed while a call's body is still arriving: the headers passed the key check before the body was
// read, but the call must not be served with a key that is closed by the time it would be (found by an
// attack: 20 of 20 such calls were served up to request_timeout_ms after the close).
import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Sends the headers at once and the body when `sendBody` resolves; the answer's status and text. */
function slowBodyCall(key: string, body: string, sendBody: Promise<void>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL('/v1/chat/completions', t.url),
      {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.flushHeaders();
    void sendBody.then(() => req.end(body));
  });
}

it('a call whose key is closed while its body arrives is refused with 401 and charged nothing', async () => {
  const { id, key } = await t.gw.keys.createApiKey(t.walletId, { name: 'closed-mid-body' });
  const body = JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 16 });
  const before = await t.balance();
  let send!: () => void;
  const bodyGoes = new Promise<void>((r) => (send = r));
  const calls = Array.from({ length: 5 }, () => slowBodyCall(key, body, bodyGoes));
  await sleep(300); // the headers are in and checked; the bodies wait
  expect(await t.gw.keys.closeKey(id)).toBe(true);
  send();
  for (const answer of await Promise.all(calls)) {
    expect(answer.status, answer.text).toBe(401);
    expect(JSON.parse(answer.text).error.message).toContain('closed');
  }
  expect(await t.balance()).toBe(before);
  // A key left open is served the same way.
  const open = await t.gw.keys.createApiKey(t.walletId, { name: 'open' });
  expect((await slowBodyCall(open.key, body, sleep(300))).status).toBe(200);
});
