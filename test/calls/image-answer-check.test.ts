// An image door's answer without images is the vendor failing, not an image: vendor D answering a chat-completion
// body to an image request fails that route (the next one is asked), and when every route does the client gets a
// 502 in the door's error shape with nothing charged, never a 200 without an image.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

/** What a vendor answering from its chat endpoint sends: well-formed JSON, and no `data` list. */
const CHAT_ANSWER = {
  id: 'chatcmpl-sim',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'a cat' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
};
const IMAGE = { model: 'image-d-2', prompt: 'a cat' };

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ routesPerVendor: 2 });
});
afterEach(() => t.sim.clearFaults());
afterAll(() => t?.close());

describe('an image answer without images', () => {
  it('fails its route: the next route answers the image, charged once', async () => {
    t.sim.inject('d0', { kind: 'wrong-body', body: CHAT_ANSWER });
    const before = await t.balance();
    const res = await post(t, '/v1/images/generations', IMAGE);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    const body = (await res.json()) as { data: { b64_json: string }[] };
    expect(typeof body.data[0]!.b64_json).toBe('string');
    expect(before - (await t.balance())).toBe(60_000_000n); // vendor D's $0.06, for d1's image only
  });

  it('answers 502 in the door error shape, charging nothing, when every route answers without images', async () => {
    t.sim.inject('d0', { kind: 'wrong-body', body: CHAT_ANSWER });
    t.sim.inject('d1', { kind: 'wrong-body', body: { ...CHAT_ANSWER, data: [] } });
    const before = await t.balance();
    const res = await post(t, '/v1/images/generations', IMAGE);
    expect(res.status).toBe(502);
    expect(res.headers.get('x-service-charged-nano')).toBeNull();
    const body = (await res.json()) as { error: { message: string; type: string } };
    expect(body.error.message).toContain('Vendor D failed on every route (2)');
    expect(body).not.toHaveProperty('data');
    expect(await t.balance()).toBe(before);
    expect(t.sim.outcomes.filter((o) => o.fault === 'wrong-body').map((o) => o.route)).toEqual(['d0', 'd0', 'd1']);
  });
});
