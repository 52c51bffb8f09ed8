// Vendor A's version and beta headers: the chat door's clients do not speak vendor A's protocol, so the
// gateway chooses them; the messages door's clients do, and theirs are passed on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

const chat = { model: 'a-top-5.5', messages: [{ role: 'user', content: 'hi' }] };

describe('vendor A headers', () => {
  it('the chat door sends its own anthropic-version and never the client beta header', async () => {
    t.sim.reset();
    const res = await post(t, '/v1/chat/completions', chat, {
      'anthropic-beta': 'fallbacks-2026-01-01',
      'anthropic-version': '1999-01-01',
    });
    expect(res.status, await res.text()).toBe(200);
    const [seen] = t.received('a');
    expect(seen!.headers['anthropic-beta']).toBeUndefined();
    expect(seen!.headers['anthropic-version']).toBe('2023-06-01');
  });

  it('the messages door passes the client version and beta on', async () => {
    t.sim.reset();
    const res = await post(
      t,
      '/v1/messages',
      { model: 'a-top-5.5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
      { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'prompt-caching-2024-07-31' },
    );
    expect(res.status, await res.text()).toBe(200);
    const [seen] = t.received('a');
    expect(seen!.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
  });
});
