// An attack on issue 39: a wallet with little credit and a key with no limits of its own; 30 calls at
// once, each leaving its output limit to the gateway (which lowers it to what the wallet can pay). The wallet must
// never go below zero and the calls together never be charged more than it had.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

describe('a small wallet and a burst of calls without an output limit', () => {
  it.each([
    ['/v1/chat/completions', { model: 'b-6', messages: [{ role: 'user', content: 'x [[sim:long=5000]]' }] }],
    ['/v1/messages', { model: 'a-top-5', max_tokens: 8000, messages: [{ role: 'user', content: 'x [[sim:long=5000]]' }] }],
    ['/v1/responses', { model: 'b-pro-5', input: 'x [[sim:long=5000]]', stream: true }],
  ] as const)('%s: 30 at once', async (path, body) => {
    const start = 20_000; // credits
    const wallet = await t.gw.ledger.createWallet({ credits: start });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'burst' });
    const statuses = await Promise.all(
      Array.from({ length: 30 }, async () => {
        const r = await fetch(`${t.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify(body),
        });
        await r.text();
        return r.status;
      }),
    );
    const res = await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } });
    const used = ((await res.json()) as any).month.used_credits;
    const w = await t.gw.ledger.balance(wallet.id);
    for (const s of statuses) expect([200, 402, 429]).toContain(s);
    expect(used).toBeLessThanOrEqual(start);
    expect(JSON.stringify(w, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toMatch(/"-/);
  });
});
