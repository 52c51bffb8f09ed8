// The gaps a second attack on issue 39 found in how a key's limits hold: a foreign output field kept the daily
// lowering of the default away, and an output limit above the model's maximum was taken. Over loopback HTTP
// against an in-process gateway and its simulator.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

interface Key {
  key: string;
  walletId: string;
}

async function keyWith(opts: { credits?: number; dailyLimitCredits?: number } = {}): Promise<Key> {
  const wallet = await t.gw.ledger.createWallet({ credits: opts.credits ?? 100_000_000 });
  const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'limited', ...opts });
  return { key, walletId: wallet.id };
}

function post(k: Key, path: string, body: unknown) {
  return fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
}

async function dayUsed(k: Key): Promise<number> {
  const res = await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${k.key}` } });
  return ((await res.json()) as any).day.used_credits;
}

describe("a foreign output field does not keep the default from fitting the key's day", () => {
  it('max_output_tokens (the responses field) on the chat door: the default is still lowered to the day', async () => {
    const k = await keyWith({ dailyLimitCredits: 1000 });
    const res = await post(k, '/v1/chat/completions', {
      model: 'b-6',
      max_output_tokens: 100_000, // not a chat-completions field: the vendor ignores it
      messages: [{ role: 'user', content: 'Say a lot. [[sim:long=3000]]' }],
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const written = Number(res.headers.get('x-service-max-tokens'));
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(200);
    await res.json();
    expect(await dayUsed(k)).toBeLessThanOrEqual(1000);
  });
});

describe("an output limit above the model's maximum output is a 400 naming it, before anything is held", () => {
  const cases = [
    ['/v1/messages', { model: 'a-top-5', max_tokens: 40_000, messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens', 32000],
    [
      '/v1/chat/completions',
      { model: 'b-6', max_completion_tokens: 200_000, messages: [{ role: 'user', content: 'hi' }] },
      'max_completion_tokens',
      128000,
    ],
    ['/v1/chat/completions', { model: 'a-top-5', max_tokens: 40_000, messages: [{ role: 'user', content: 'hi' }] }, 'max_tokens', 32000],
    ['/v1/responses', { model: 'b-pro-5', max_output_tokens: 200_000, input: 'hi' }, 'max_output_tokens', 128000],
  ] as const;

  it.each(cases)('%s %o', async (path, body, field, most) => {
    const k = await keyWith({ credits: 1_000_000_000 });
    const sent = t.sim.received.length;
    const res = await post(k, path, body);
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBe(400);
    const error = path === '/v1/messages' ? (expect(json.type).toBe('error'), json.error) : json.error;
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toContain(field);
    expect(error.message).toContain(String(most));
    if (path !== '/v1/messages') expect(error.param).toBe(field);
    expect(t.sim.received.length).toBe(sent);
    expect(await dayUsed(k)).toBe(0);
  });

  it('the simulator refuses it too, as the vendor does', async () => {
    const res = await fetch(`${t.sim.routeUrl('a0')}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'vendor-a-secret', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a-top-5', max_tokens: 40_000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const json = (await res.json()) as any;
    expect(res.status).toBe(400);
    expect(json.error.message).toContain('32000');
    const chat = await fetch(`${t.sim.routeUrl('b0')}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer vendor-b-secret', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-6', max_completion_tokens: 200_000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(chat.status).toBe(400);
  });
});
