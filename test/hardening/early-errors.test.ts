// Errors raised before any route is found (a URL that cannot be decoded, headers Node's parser refuses)
// answer in the door's error shape like every other error, so an SDK client can read them.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

/** A raw request (fetch would refuse to send these), answered with status and parsed body. */
function raw(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const { port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

describe('errors before routing', () => {
  it('a malformed percent-encoding on the chat door is a 400 in the chat shape', async () => {
    const { status, body } = await raw('/v1/chat/completions%');
    expect(status).toBe(400);
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(/URL/);
  });

  it('a malformed percent-encoding on the messages door is a 400 in the messages shape', async () => {
    const { status, body } = await raw('/v1/messages%E0%A4%A');
    expect(status).toBe(400);
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
  });

  it('headers over the limit are a 431 in the chat shape', async () => {
    const { status, body } = await raw('/v1/chat/completions', { 'x-big': 'a'.repeat(20_000) });
    expect(status).toBe(431);
    expect(body.error.type).toBe('request_too_large');
  });
});
