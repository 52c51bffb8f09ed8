// An attack on issue 39: credits granted for vendor B only never pay for vendor A or C work, through
// any door (the chat door speaks vendor A's format for it), even in a burst.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

describe('a wallet whose only credits are for vendor B', () => {
  it.each([
    ['/v1/chat/completions', { model: 'a-top-5', max_tokens: 50, messages: [{ role: 'user', content: 'x' }] }],
    ['/v1/chat/completions', { model: 'c-flash-3', messages: [{ role: 'user', content: 'x' }] }],
    ['/v1/messages', { model: 'a-small-4.5', max_tokens: 50, messages: [{ role: 'user', content: 'x' }] }],
    ['/v1/embeddings', { model: 'embedding-c-1', input: 'x' }],
  ] as const)('%s %j: 10 at once, all refused, nothing sent', async (path, body) => {
    const wallet = await t.gw.ledger.createWallet({});
    await t.gw.ledger.topUp(wallet.id, { credits: 5_000_000, vendors: ['b'] });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'b-only' });
    const sent = t.sim.received.length;
    const out = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const r = await fetch(`${t.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify(body),
        });
        return `${r.status} ${(await r.text()).slice(0, 100)}`;
      }),
    );
    expect(out.filter((s) => s.startsWith('200'))).toEqual([]);
    expect(t.sim.received.length).toBe(sent);
    const b = await t.gw.ledger.balance(wallet.id);
    expect(b.availableNano).toBe(5_000_000n * 1000n);
  });
});
