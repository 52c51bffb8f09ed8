// Keys, plans, quotas and audiences as a client meets them on the AI doors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const chat = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body }),
  });

async function walletWith(opts: { credits?: number; vendors?: string[]; splitsUsage?: boolean }) {
  const w = await t.gw.ledger.createWallet({ splitsUsage: opts.splitsUsage });
  if (opts.credits) await t.gw.ledger.topUp(w.id, { credits: opts.credits, vendors: opts.vendors ?? null });
  return w.id;
}

describe('plans, keys and quotas on the AI doors', () => {
  it('403 model_not_in_plan for a vendor C model without C-capable credits, naming a model the credits can call', async () => {
    const walletId = await walletWith({ credits: 1_000_000, vendors: ['d'] });
    const { key } = await t.gw.keys.createApiKey(walletId);
    const sent = t.sim.received.length;
    const res = await chat(key, { model: 'c-flash-3' });
    expect(res.status).toBe(403);
    const body = (await res.json()) as any;
    expect(body.error.type).toBe('model_not_in_plan');
    expect(body.error.suggestion).toMatch(/^d-/);
    expect(body.error.message).toContain(body.error.suggestion);
    expect(t.sim.received.length).toBe(sent);
    expect((await t.gw.ledger.balance(walletId)).availableNano).toBe(1_000_000_000n);
  });

  it('the model suggested in a 403 serves the door the call came to: calling it there is answered', async () => {
    // Vendor B's likest model to c-pro-3-preview by price and reasoning is served on /v1/responses only.
    const walletId = await walletWith({ credits: 10_000_000, vendors: ['a', 'b'] });
    const { key } = await t.gw.keys.createApiKey(walletId);
    const res = await chat(key, { model: 'c-pro-3-preview' });
    expect(res.status).toBe(403);
    const { suggestion } = ((await res.json()) as any).error;
    expect(typeof suggestion).toBe('string');
    const again = await chat(key, { model: suggestion, max_completion_tokens: 16 });
    expect(again.status, await again.clone().text()).toBe(200);
  });

  it('a vendor C pack serves vendor C models', async () => {
    const walletId = await walletWith({ credits: 1_000_000, vendors: ['c'] });
    const { key } = await t.gw.keys.createApiKey(walletId);
    const res = await chat(key, { model: 'c-flash-3' });
    expect(res.status).toBe(200);
    expect((await t.gw.ledger.balance(walletId)).availableNano).toBeLessThan(1_000_000_000n);
  });

  it('402 insufficient_credit when the balance is below the reservation; lowering max_tokens lets it pass', async () => {
    const walletId = await walletWith({ credits: 20_000 }); // $0.02
    const { key } = await t.gw.keys.createApiKey(walletId);
    const sent = t.sim.received.length;
    const refused = await chat(key, { model: 'a-top-5.5', max_tokens: 64000 });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as any).error.type).toBe('insufficient_credit');
    expect(t.sim.received.length).toBe(sent);
    expect((await t.gw.ledger.balance(walletId)).availableNano).toBe(20_000_000n);
    const ok = await chat(key, { model: 'a-top-5.5', max_tokens: 100 });
    expect(ok.status).toBe(200);
  });

  it('a management key cannot call an AI door', async () => {
    const { key } = await t.gw.keys.createManagementKey(t.walletId);
    const res = await chat(key, { model: 'a-top-5.5' });
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.type).toBe('authentication_error');
  });

  it('x-api-key works on the messages door only', async () => {
    const onMessages = await fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a-top-5.5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(onMessages.status).toBe(200);
    const onChat = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a-top-5.5', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(onChat.status).toBe(401);
    expect(((await onChat.json()) as any).error.message).toContain('Authorization: Bearer');
  });

  it('the monthly limit is checked at call start against the largest amount; GET /v1/key counts finished calls', async () => {
    const walletId = await walletWith({ credits: 1_000_000 });
    const { key } = await t.gw.keys.createApiKey(walletId, { monthlyLimitCredits: 20_000 });
    // a-top-5.5 output is $25 per 1M: 64000 max tokens may cost 1,600,000+ credits.
    const refused = await chat(key, { model: 'a-top-5.5', max_tokens: 64000 });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as any).error.type).toBe('key_limit_exceeded');
    const ok = await chat(key, {
      model: 'a-top-5.5',
      max_tokens: 20,
      messages: [{ role: 'user', content: '[[sim:usage input=100 output=10]]' }],
    });
    expect(ok.status).toBe(200);
    const status = (await (await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
    // 100 × $5/M + 10 × $25/M = $0.00075 = 750 credits.
    expect(status.month).toMatchObject({ limit_credits: 20_000, used_credits: 750, remaining_credits: 19_250 });
    expect(status.day.used_credits).toBe(750);
  });

  it('a student key cannot use web search; a teacher key can', async () => {
    const walletId = await walletWith({ credits: 10_000_000, splitsUsage: true });
    const student = await t.gw.keys.createApiKey(walletId, { audience: 'student' });
    const teacher = await t.gw.keys.createApiKey(walletId, { audience: 'teacher' });
    const body = { model: 'b-5', input: 'news', tools: [{ type: 'web_search' }] };
    const post = (key: string) =>
      fetch(`${t.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const refused = await post(student.key);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.message).toMatch(/web search/i);
    expect((await post(teacher.key)).status).toBe(200);
  });

  it('GET /v1/models lists only what the key may call', async () => {
    const ids = async (key: string) =>
      ((await (await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as any).data.map(
        (m: any) => m.id,
      );
    const dOnly = await t.gw.keys.createApiKey(await walletWith({ credits: 1_000, vendors: ['d'] }));
    const listed = await ids(dOnly.key);
    expect(listed).toContain('d-4');
    expect(listed.filter((id: string) => id.startsWith('c-') || id.startsWith('embedding-c'))).toEqual([]);
    const everything = await ids(t.apiKey);
    expect(everything).toContain('c-flash-3');
    expect(everything).toContain('video-d-1');
    const split = await walletWith({ credits: 1_000, splitsUsage: true });
    const student = await t.gw.keys.createApiKey(split, { audience: 'student' });
    const forStudent = await ids(student.key);
    expect(forStudent).not.toContain('video-d-1');
    expect(forStudent).toContain('a-top-5.5');
  });

  it('GET /v1/credits answers the wallet credits', async () => {
    const walletId = await walletWith({ credits: 12_345 });
    const { key } = await t.gw.keys.createApiKey(walletId);
    const res = await fetch(`${t.url}/v1/credits`, { headers: { authorization: `Bearer ${key}` } });
    expect(await res.json()).toMatchObject({ object: 'credits', wallet_id: walletId, credits: 12_345, reserved_credits: 0 });
  });
});
