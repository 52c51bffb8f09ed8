// Issue 40: a wallet or a key's monthly limit too small for even the shortest answer (its input and one output
// token) is told so, with what the call needs and what is left, and not to lower an output limit it never sent
// (no output limit would help). A refusal an output limit can lift still names the limit the client sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const call = (key: string, body: object) =>
  fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const messageOf = async (res: Response) => ((await res.json()) as { error: { message: string } }).error.message;

describe('a limit too small for the shortest answer', () => {
  // About 60 KB of input: its hold alone (b-5 at $1.25 per 1M input tokens, a token per byte) is about 75 credits.
  const long = { model: 'b-5', messages: [{ role: 'user', content: 'hello '.repeat(10_000) }] };

  it('a key whose monthly limit leaves 30 credits: 429 saying what the call needs, not to lower max_tokens', async () => {
    const { key } = await t.gw.keys.createApiKey(t.walletId, { name: 'thirty', monthlyLimitCredits: 30 });
    const res = await call(key, long);
    expect(res.status).toBe(429);
    const message = await messageOf(res);
    expect(message).toMatch(/^Not even the shortest answer fits: this call needs at least \d+ credits/);
    expect(message).toContain("this key's monthly limit leaves 30 credits");
    expect(message).not.toMatch(/max_tokens|max_completion_tokens/);
    expect(t.received('b').some((r) => JSON.stringify(r.body).includes('hello hello'))).toBe(false);
  });

  it('a wallet of 1 credit: 402 saying so, whether or not the client sent an output limit', async () => {
    const wallet = await t.gw.ledger.createWallet({ credits: 1 });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'poor' });
    for (const body of [long, { ...long, max_completion_tokens: 4096 }]) {
      const res = await call(key, body);
      expect(res.status).toBe(402);
      const message = await messageOf(res);
      expect(message).toContain('Not even the shortest answer fits');
      expect(message).toContain('the wallet has 1 credits');
    }
  });

  it("while the wallet's own calls in flight hold the rest, it also says a retry in a moment may fit", async () => {
    const wallet = await t.gw.ledger.createWallet({ credits: 80_000 });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'burst' });
    // The first call holds b-4.1-mini's whole output (52,429 credits) while the vendor takes its time; the second's
    // input alone (about 72 KB, some 29,000 credits) does not fit in the 27,571 left beside it.
    t.sim.inject('b0', { kind: 'delay', ms: 1_500 });
    const first = call(key, { model: 'b-4.1-mini', max_completion_tokens: 32_768, messages: [{ role: 'user', content: 'first' }] });
    await new Promise((r) => setTimeout(r, 400));
    const second = await call(key, { model: 'b-4.1-mini', messages: [{ role: 'user', content: 'hello '.repeat(12_000) }] });
    expect(second.status).toBe(402);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const message = await messageOf(second);
    expect(message).toContain('Not even the shortest answer fits');
    expect(message).toContain('a retry in a moment may fit');
    expect((await first).status).toBe(200);
  });

  it('a limit the client sent that is too large, where a smaller one fits, is still named in the 402', async () => {
    const wallet = await t.gw.ledger.createWallet({ credits: 1_000 });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'small' });
    const res = await call(key, { model: 'b-5', max_completion_tokens: 100_000, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(402);
    expect(await messageOf(res)).toContain('lower max_completion_tokens (100000)');
  });
});
