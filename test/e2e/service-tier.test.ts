// service_tier on the text doors: the gateway holds and charges every call at the standard tier, so `auto` (which
// lets a vendor answer at a faster tier it bills above the catalog's prices, where the account has one) is sent as
// the door's standard value (config/doors.yaml `rewrite`), and the answer says so in x-service-adjusted. An omitted
// tier, which the vendors read as auto, is sent as the standard value too, unnamed: the client asked for nothing
// else (found by an attack on 2026-12-06). The media doors refuse the field: their calls are priced at one tier.
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
    expect(omitted.body.service_tier).toBe('default');
    expect(omitted.adjusted).toBeNull();
  });

  it('chat door, vendor E: its hosts have no tiers, so an omitted tier stays omitted', async () => {
    const omitted = await sent('e', '/v1/chat/completions', { model: 'e-open-8b', messages: USER });
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
    const omitted = await sent('a', '/v1/messages', base, A_VERSION);
    expect(omitted.body.service_tier).toBe('standard_only');
    expect(omitted.adjusted).toBeNull();
  });

  it('messages door: speed other than standard is refused before the vendor, any spelling', async () => {
    const n = t.received('a').length;
    for (const speed of ['fast', 'FAST', ' fast', 'turbo', null]) {
      const res = await post(t, '/v1/messages', { model: 'a-top-5.5', max_tokens: 32, messages: USER, speed }, A_VERSION);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    }
    expect(t.received('a').length).toBe(n);
  });

  it('responses door: auto goes as default', async () => {
    const auto = await sent('b', '/v1/responses', { model: 'b-5', input: 'hi', service_tier: 'auto' });
    expect(auto.body.service_tier).toBe('default');
    expect(auto.adjusted).toBe('service_tier=default');
    const omitted = await sent('b', '/v1/responses', { model: 'b-5', input: 'hi' });
    expect(omitted.body.service_tier).toBe('default');
  });

  it('chat door, vendor A: every accepted tier, and none, reaches the native format as standard_only', async () => {
    for (const tier of ['auto', 'default', undefined]) {
      const got = await sent('a', '/v1/chat/completions', { model: 'a-top-5.5', messages: USER, service_tier: tier });
      expect(got.body.service_tier).toBe('standard_only');
    }
  });

  it.each([
    ['/v1/images/generations', { model: 'image-b-1', prompt: 'a cat' }],
    ['/v1/audio/speech', { model: 'tts-1', input: 'hi', voice: 'alloy' }],
    ['/v1/embeddings', { model: 'text-embedding-3-small', input: 'hi' }],
    ['/v1/moderations', { input: 'hi' }],
  ])('%s refuses service_tier before the vendor, charging nothing', async (path, body) => {
    const before = await t.gw.ledger.balance(t.walletId);
    const res = await post(t, path, { ...body, service_tier: 'priority' });
    expect(res.status, await res.clone().text()).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^service_tier is not offered/);
    expect((await t.gw.ledger.balance(t.walletId)).availableNano).toBe(before.availableNano);
  });
});
