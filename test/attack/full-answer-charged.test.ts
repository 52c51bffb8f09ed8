// An attack on issue 39: an answer received in full is always charged, whatever the client asks of
// the stream's usage report.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const user = [{ role: 'user', content: 'x [[sim:long=200]]' }];
describe('a full streamed answer is charged', () => {
  it.each([
    [
      '/v1/chat/completions',
      { model: 'b-6', max_completion_tokens: 400, stream: true, stream_options: { include_usage: false }, messages: user },
    ],
    ['/v1/chat/completions', { model: 'b-6', max_completion_tokens: 400, stream: true, stream_options: null, messages: user }],
    ['/v1/chat/completions', { model: 'b-6', max_completion_tokens: 400, stream: 'true', messages: user }],
    [
      '/v1/chat/completions',
      {
        model: 'c-flash-3',
        max_tokens: 400,
        stream: true,
        stream_options: { include_usage: false, continuous_usage_stats: false },
        messages: user,
      },
    ],
    ['/v1/chat/completions', { model: 'a-top-5', max_tokens: 400, stream: true, stream_options: { include_usage: false }, messages: user }],
    ['/v1/responses', { model: 'b-5', max_output_tokens: 400, stream: true, input: 'x [[sim:long=200]]' }],
    ['/v1/messages', { model: 'a-small-4.5', max_tokens: 400, stream: true, messages: user }],
  ] as const)('%s %j', async (path, body) => {
    const wallet = await t.gw.ledger.createWallet({ credits: 100_000_000 });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 's' });
    const r = await fetch(`${t.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    const used = ((await (await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).json()) as any).month
      .used_credits;
    if (r.status !== 200) return; // refused: nothing answered, nothing to charge
    expect(text).toContain('word200');
    expect(used).toBeGreaterThan(0);
  });
});
