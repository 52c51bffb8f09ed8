// A request without a valid key gets its 401 before its body is read: the test announces a 50 MB body,
// sends one small piece of it and waits. Were the body read first, no answer could come before the rest.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

/** Status and body of the answer to a request whose body is announced but never finished. */
function answerToUnfinishedBody(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const url = new URL(path, t.url);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-length': String(50 * 1024 * 1024), ...headers } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.setTimeout(5000, () => reject(new Error('no answer before the body was finished')));
    req.write('{"model":"b-5","messages":[');
  });
}

describe('authentication comes before the body', () => {
  for (const [path, type] of [
    ['/v1/chat/completions', 'application/json'],
    ['/v1/messages', 'application/json'],
    ['/v1/images/edits', 'multipart/form-data; boundary=x'],
    ['/v1/videos', 'application/json'],
  ] as const) {
    it(`${path} answers 401 to a wrong key without reading the body`, async () => {
      const res = await answerToUnfinishedBody(path, {
        authorization: 'Bearer sk-wrong',
        'x-api-key': 'sk-wrong',
        'content-type': type,
        'anthropic-version': '2023-06-01',
      });
      expect(res.status, res.body).toBe(401);
    });
  }

  it('the key doors answer 401 to a missing management key without reading the body', async () => {
    for (const path of ['/v1/keys']) {
      const res = await answerToUnfinishedBody(path, { 'content-type': 'application/json' });
      expect(res.status, res.body).toBe(401);
    }
  });

  it('the messages door answers its 401 in its own shape', async () => {
    const res = await answerToUnfinishedBody('/v1/messages', { 'x-api-key': 'sk-wrong', 'content-type': 'application/json' });
    expect(JSON.parse(res.body)).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });
});
