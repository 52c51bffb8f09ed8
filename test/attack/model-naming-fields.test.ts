// Fields a host could read as a second model (a fallback list, a reasoning model) are refused on every text door
// before anything is held or sent: the key's model list, the hold and the charge are for the call's one model.
// Found by an attack (a key allowed one model sent the others in these fields, and the vendor received them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
let key: string;
beforeAll(async () => {
  t = await startTestGateway();
  const wallet = await t.gw.ledger.createWallet({ credits: 100_000_000 });
  key = (await t.gw.keys.createApiKey(wallet.id, { name: 'one model' })).key;
});
afterAll(() => t?.close());

const user = [{ role: 'user', content: 'x' }];
const cases: [string, string, Record<string, unknown>][] = [
  ['messages: models', '/v1/messages', { model: 'a-small-4.5', max_tokens: 16, messages: user, models: ['a-top-5'] }],
  ['messages: fallback_models', '/v1/messages', { model: 'a-small-4.5', max_tokens: 16, messages: user, fallback_models: ['a-top-5'] }],
  ['chat: fallbacks', '/v1/chat/completions', { model: 'b-5', max_completion_tokens: 16, messages: user, fallbacks: ['b-pro-5'] }],
  [
    'chat: fallback_models',
    '/v1/chat/completions',
    { model: 'b-5', max_completion_tokens: 16, messages: user, fallback_models: ['b-pro-5'] },
  ],
  [
    'responses: reasoning.model',
    '/v1/responses',
    { model: 'b-5', input: 'x', max_output_tokens: 16, reasoning: { effort: 'low', model: 'b-pro-5' } },
  ],
  ['responses: models', '/v1/responses', { model: 'b-5', input: 'x', max_output_tokens: 16, models: ['b-pro-5'] }],
];

describe('a field naming a second model', () => {
  it.each(cases)('%s: 400 naming the field, nothing sent, nothing held', async (_name, path, body) => {
    const sent = t.sim.received.length;
    const res = await fetch(`${t.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    expect(res.status, text).toBe(400);
    expect(text).toMatch(/models|fallback|reasoning\.model/);
    expect(t.sim.received.length).toBe(sent);
    expect(res.headers.get('x-service-charged-nano')).toBeNull();
  });
});
