// service_tier auto on the text doors: the gateway holds and charges every call at the standard tier, so `auto`
// (which lets a vendor answer at a faster tier it bills above the catalog's prices, where the account has one) is
// sent as the door's standard value (config/doors.yaml `rewrite`), and the answer says so in x-service-adjusted.
// The standard values, and an omitted tier, reach the vendor as sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VendorId } from '../../engine/core/types.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { A_VERSION, post } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const USER = [{ role: 'user', content: 'hi' }];

/** Sends `body` to `path`; the body vendor `v` received and the answer's x-service-adjusted. */
async function sent(v: VendorId, path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const n = t.received(v).length;
  const res = await post(t, path, body, headers);
  expect(res.status, await res.clone().text()).toBe(200);
  await res.arrayBuffer();
  const got = t.received(v).slice(n);
  expect(got).toHaveLength(1);
  return { body: got[0]!.body as Record<string, unknown>, adjusted: res.headers.get('x-service-adjusted') };
}

describe('service_tier auto is sent as the standard tier', () => {
  it.each([
    ['b', 'b-5'],
    ['c', 'c-flash-3'],
    ['d', 'd-4'],
  ] as const)('chat door, vendor %s: auto goes as default', async (v, model) => {
    const auto = await sent(v, '/v1/chat/completions', { model, messages: USER, service_tier: 'auto' });
    expect(auto.body.service_tier).toBe('default');
    expect(auto.adjusted).toBe('service_tier=default');
    const standard = await sent(v, '/v1/chat/completions', { model, messages: USER, service_tier: 'default' });
    expect(standard.body.service_tier).toBe('default');
    expect(standard.adjusted).toBeNull();
    const omitted = await sent(v, '/v1/chat/completions', { model, messages: USER });
    expect('service_tier' in omitted.body).toBe(false);
  });

  it('messages door: auto goes as standard_only; standard_only as sent', async () => {
    const base = { model: 'a-top-5.5', max_tokens: 32, messages: USER };
    const auto = await sent('a', '/v1/messages', { ...base, service_tier: 'auto' }, A_VERSION);
    expect(auto.body.service_tier).toBe('standard_only');
    expect(auto.adjusted).toBe('service_tier=standard_only');
    const standard = await sent('a', '/v1/messages', { ...base, service_tier: 'standard_only' }, A_VERSION);
    expect(standard.body.service_tier).toBe('standard_only');
    expect(standard.adjusted).toBeNull();
  });

  it('responses door: auto goes as default', async () => {
    const auto = await sent('b', '/v1/responses', { model: 'b-5', input: 'hi', service_tier: 'auto' });
    expect(auto.body.service_tier).toBe('default');
    expect(auto.adjusted).toBe('service_tier=default');
  });

  it('chat door, vendor A: no tier reaches the native format', async () => {
    const auto = await sent('a', '/v1/chat/completions', { model: 'a-top-5.5', messages: USER, service_tier: 'auto' });
    expect('service_tier' in auto.body).toBe(false);
  });
});
