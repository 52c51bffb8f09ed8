// Issue 40: errors name their limits. A body past limits.yaml's body_limit_bytes is a 413 naming the limit and
// its setting; a body that is not JSON is told to send application/json; a prompt past the model's context
// window is a 400 with nothing held: by the gateway for a vendor whose tokenizer never joins words (vendor B),
// else by the vendor, as the bundled simulator refuses it. Nothing is charged either way.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { A_VERSION, post } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const send = (path: string, body: string, contentType?: string, extra: Record<string, string> = {}) =>
  fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, ...(contentType ? { 'content-type': contentType } : {}), ...extra },
    body,
  });

describe('errors that name their limits', () => {
  it('a 60 MiB body is a 413 naming the limit and body_limit_bytes', async () => {
    const res = await send(
      '/v1/chat/completions',
      `{"model":"b-5","messages":[],"pad":"${'x'.repeat(60 * 1024 * 1024)}"}`,
      'application/json',
    );
    expect(res.status).toBe(413);
    const { error } = (await res.json()) as { error: { type: string; message: string } };
    expect(error.type).toBe('request_too_large');
    expect(error.message).toContain('52,428,800 bytes (50 MiB)');
    expect(error.message).toContain('body_limit_bytes in config/limits.yaml');
  }, 60_000);

  it('a text/plain or form body is told to send application/json, in the door’s shape', async () => {
    const json = JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'hi' }] });
    for (const [path, type, extra] of [
      ['/v1/chat/completions', 'text/plain', {}],
      ['/v1/chat/completions', 'application/x-www-form-urlencoded', {}],
      ['/v1/messages', 'text/plain', A_VERSION],
    ] as const) {
      const res = await send(path, json, type, extra);
      expect(res.status, `${path} ${type}`).toBe(400);
      const body = (await res.json()) as { type?: string; error: { type: string; message: string } };
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.message).toContain('content-type: application/json');
      expect(body.error.message).toContain(type);
      if (path === '/v1/messages') expect(body.type).toBe('error');
    }
    // The videos door also takes a form, and says so.
    const video = await send('/v1/videos', JSON.stringify({ model: 'video-d-1', prompt: 'a cat' }), 'text/plain');
    expect(video.status).toBe(400);
    expect(((await video.json()) as { error: { message: string } }).error.message).toContain('application/json (or multipart/form-data)');
  });

  it('1,200,000 words to b-4.1-mini are a 400 before anything is held: balance unchanged, vendor not called', async () => {
    const before = { balance: await t.balance(), received: t.received('b').length };
    const words = 'hello '.repeat(1_200_000);
    const res = await post(t, '/v1/chat/completions', { model: 'b-4.1-mini', messages: [{ role: 'user', content: words }] });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { type: string; message: string } };
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toContain('context window of b-4.1-mini');
    expect(error.message).toContain('at least 1,200,000 tokens');
    expect(error.message).toContain('1,047,576');
    expect(await t.balance()).toBe(before.balance);
    expect(t.received('b').length).toBe(before.received);
  }, 60_000);

  it('past a vendor E model’s window the simulator refuses as the vendor does: 400, nothing charged', async () => {
    const before = await t.balance();
    const res = await post(t, '/v1/chat/completions', {
      model: 'e-open-405b',
      messages: [{ role: 'user', content: 'hello '.repeat(140_000) }],
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string } };
    expect(error.message).toMatch(/maximum context length is 131072 tokens/);
    expect(t.received('e').length).toBe(1); // the gateway does not know vendor E's tokenizer: the vendor decides
    expect(await t.balance()).toBe(before);
  }, 60_000);
});
