import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('GET /v1/models', () => {
  it('lists every field of the model record', async () => {
    const res = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: Record<string, any>[] };
    const pro = data.find((m) => m.id === 'b-pro-5.5')!;
    expect(pro).toMatchObject({
      object: 'model',
      owned_by: 'b',
      kind: 'text',
      endpoint: '/v1/responses',
      supports_effort: true,
      context_window: 1050000,
      pricing: {
        input_per_mtok: 30,
        output_per_mtok: 180,
        tiers: [{ above_input_tokens: 272000, input_per_mtok: 60, output_per_mtok: 270 }],
      },
      sale_ends: null,
      successor: null,
      data_handling: null,
    });
    for (const field of ['effort_levels', 'rules', 'pricing', 'context_window', 'sale_ends', 'successor', 'data_handling']) {
      expect(pro).toHaveProperty(field);
    }
    const flash = data.find((m) => m.id === 'c-flash-3')!;
    expect(flash.pricing.scheduled).toEqual([{ from: '2027-01-01', input_per_mtok: 1.5, output_per_mtok: 7.5 }]);
    const ending = data.find((m) => m.id === 'image-b-4')!;
    expect(ending).toMatchObject({ sale_ends: '2026-12-01', successor: expect.any(String) });
    const e = data.find((m) => m.owned_by === 'e')!;
    expect(e.data_handling).toMatchObject({ region: 'United States', deletes_request_after_answer: true, cache_retention: 'undisclosed' });
    const a = data.find((m) => m.id === 'a-top-5.5')!;
    expect(a.rules).toMatchObject({ drops: ['temperature', 'top_p'], lowers_forced_tool_choice: true });
    expect(data.find((m) => m.id === 'o-pro-1')).toBeUndefined(); // sale ended 2026-10-23
  });

  it('needs a key', async () => {
    const res = await fetch(`${t.url}/v1/models`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.type).toBe('authentication_error');
  });
});

describe('model lookup over HTTP', () => {
  it('404 model_not_found in the chat shape names the closest id; nothing reaches a vendor or is charged', async () => {
    const before = await t.balance();
    const sent = t.sim.received.length;
    const res = await post('/v1/chat/completions', { model: 'b-5.55', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(404);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ type: 'model_not_found', code: 'model_not_found' });
    expect(body.error.message).toContain("'b-5.5'");
    expect(t.sim.received.length).toBe(sent);
    expect(await t.balance()).toBe(before);
  });

  it('404 in the messages shape on the messages door', async () => {
    const res = await post(
      '/v1/messages',
      { model: 'a-top-55', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      { 'anthropic-version': '2023-06-01' },
    );
    expect(res.status).toBe(404);
    const body = (await res.json()) as any;
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('model_not_found');
    expect(body.error.message).toContain("'a-top-5.5'");
  });

  it('400 naming the right door, before any vendor call or charge', async () => {
    const before = await t.balance();
    const sent = t.sim.received.length;
    const res = await post('/v1/chat/completions', { model: 'image-b-1', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('/v1/images/generations');
    const res2 = await post('/v1/responses', { model: 'a-top-5.5', input: 'hi' });
    expect(res2.status).toBe(400);
    expect(((await res2.json()) as any).error.message).toContain('/v1/chat/completions');
    expect(t.sim.received.length).toBe(sent);
    expect(await t.balance()).toBe(before);
  });

  it('a model past its sale-end date gives 404 naming the successor', async () => {
    const res = await post('/v1/responses', { model: 'o-pro-1', input: 'hi' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.message).toContain('o-pro-3');
  });

  it('a malformed JSON body gives 400 in the door shape, never 500', async () => {
    const res = await fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: '{"model": "a-top-5.5", ',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
  });
});
