// A text door's whole answer without what the door answers with (a chat completion without choices, a message
// without content, a response without output) is the vendor failing, not an answer: the route fails and the next
// one answers, charged once; when every route does, a 502 in the door's error shape and nothing charged. Before,
// the client got the vendor's wrong body as a 200, charged an estimate.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

/** What a vendor answering from its image endpoint sends: well-formed JSON, none of the text doors' lists. */
const IMAGE_ANSWER = { created: 1, data: [{ b64_json: 'AA==' }], usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } };

const CASES = [
  { door: '/v1/chat/completions', route: 'b', body: { model: 'b-4.1-mini', messages: [{ role: 'user', content: 'hi' }] }, list: 'choices' },
  { door: '/v1/chat/completions', route: 'a', body: { model: 'a-top-5.5', messages: [{ role: 'user', content: 'hi' }] }, list: 'choices' },
  {
    door: '/v1/messages',
    route: 'a',
    body: { model: 'a-top-5.5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
    list: 'content',
  },
  { door: '/v1/responses', route: 'b', body: { model: 'b-4.1-mini', input: 'hi' }, list: 'output' },
] as const;

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ routesPerVendor: 2 });
});
afterEach(() => t.sim.clearFaults());
afterAll(() => t?.close());

describe.each(CASES)('$door to vendor $route: an answer without $list', ({ door, route, body, list }) => {
  it('fails its route: the next route answers, charged once', async () => {
    t.sim.inject(`${route}0`, { kind: 'wrong-body', body: IMAGE_ANSWER });
    const before = await t.balance();
    const res = await post(t, door, body, { 'anthropic-version': '2023-06-01' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    const answer = (await res.json()) as Record<string, unknown>;
    expect(Array.isArray(answer[list])).toBe(true);
    expect(answer).not.toHaveProperty('data');
    expect(before - (await t.balance())).toBe(BigInt(res.headers.get('x-service-charged-nano')!));
    expect(await t.held()).toBe(0n);
  });

  it("answers 502 in the door's error shape, charging nothing, when every route does", async () => {
    t.sim.inject(`${route}0`, { kind: 'wrong-body', body: IMAGE_ANSWER });
    t.sim.inject(`${route}1`, { kind: 'wrong-body', body: { ...IMAGE_ANSWER, [list]: 'not a list' } });
    const before = await t.balance();
    const res = await post(t, door, body, { 'anthropic-version': '2023-06-01' });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-service-charged-nano')).toBeNull();
    const err = (await res.json()) as Record<string, any>;
    if (door === '/v1/messages') expect(err.type).toBe('error');
    expect(err.error).toMatchObject({ type: 'upstream_error' });
    expect(err.error.message).toContain('failed on every route (2)');
    expect(err).not.toHaveProperty('data');
    expect(await t.balance()).toBe(before);
    expect(await t.held()).toBe(0n);
  });
});

/** Usage far above a call's price, so a charge of it would show; each body is a 200 the vendor did no work for. */
const USAGE = { prompt_tokens: 100_000, completion_tokens: 900_000, input_tokens: 100_000, output_tokens: 900_000 };
const EMPTY_ENTRIES = [
  { door: CASES[0], bodies: [{ choices: [null] }, { choices: [{}] }, null] },
  { door: CASES[1], bodies: [{ content: [null] }, null] },
  { door: CASES[2], bodies: [{ content: [null] }, null] },
  { door: CASES[3], bodies: [{ output: [null] }, { status: 'failed', error: { code: 'server_error' }, output: [] }, null] },
] as const;

describe.each(EMPTY_ENTRIES)('$door.door to vendor $door.route: entries that are no answer', ({ door, bodies }) => {
  it.each(bodies.map((b) => [JSON.stringify(b), b]))('%s fails its route, and the next route answers', async (_, wrong) => {
    t.sim.inject(`${door.route}0`, { kind: 'wrong-body', body: wrong === null ? null : { ...wrong, usage: USAGE } });
    const res = await post(t, door.door, door.body, { 'anthropic-version': '2023-06-01' });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    // The healthy route's own small usage: nothing of the wrong body's 900,000 output tokens.
    expect(Number(res.headers.get('x-service-charged-nano'))).toBeLessThan(10_000_000);
    await res.json();
    expect(await t.held()).toBe(0n);
  });
});
