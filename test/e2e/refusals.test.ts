// Every refusal of the text doors: 400 invalid_request_error in the door's shape, the simulator received
// NOTHING and the wallet balance did not move. Then vendor-side refusals: passed through unchanged, not
// retried, nothing charged.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { A_VERSION, expectInvalid, post } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const USER = [{ role: 'user', content: 'hi' }];
const FN_TOOL = { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } };

/** Refused before any vendor call: 400, nothing received by any vendor route, nothing held or charged. */
async function refused(path: string, body: unknown, headers: Record<string, string> = {}, shape: 'chat' | 'messages' = 'chat') {
  const before = await t.balance();
  const sent = t.sim.received.length;
  const res = await post(t, path, body, headers);
  const answer = await expectInvalid(res, shape);
  expect(t.sim.received.length, 'a vendor was called').toBe(sent);
  expect(await t.balance()).toBe(before);
  expect(await t.held()).toBe(0n);
  return answer;
}

describe('chat door refusals', () => {
  it.each([
    ['b-5', 'B'],
    ['c-flash-3', 'C'],
    ['d-4', 'D'],
    ['a-top-5.5', 'A'],
  ])('service_tier priority for %s (vendor %s)', async (model) => {
    const body = await refused('/v1/chat/completions', { model, messages: USER, service_tier: 'priority' });
    expect(body.error.message).toContain('service_tier "priority"');
  });

  it('service_tier flex and fast too; auto and default pass', async () => {
    await refused('/v1/chat/completions', { model: 'b-5', messages: USER, service_tier: 'flex' });
    await refused('/v1/chat/completions', { model: 'b-5', messages: USER, service_tier: 'fast' });
    for (const tier of ['auto', 'default']) {
      const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, service_tier: tier });
      expect(res.status).toBe(200);
      await res.json();
    }
  });

  it('deferred: true', async () => {
    const body = await refused('/v1/chat/completions', { model: 'b-5', messages: USER, deferred: true });
    expect(body.error.message).toContain('deferred');
  });

  it('reasoning_effort max for vendor B', async () => {
    const body = await refused('/v1/chat/completions', { model: 'b-5.5', messages: USER, reasoning_effort: 'max' });
    expect(body.error.message).toContain('xhigh');
  });

  it('tools on b-5.5 without reasoning_effort none (omitted or another value); with none they pass', async () => {
    await refused('/v1/chat/completions', { model: 'b-5.5', messages: USER, tools: [FN_TOOL] });
    const body = await refused('/v1/chat/completions', { model: 'b-5.5', messages: USER, tools: [FN_TOOL], reasoning_effort: 'low' });
    expect(body.error.message).toContain("reasoning_effort 'none'");
    const ok = await post(t, '/v1/chat/completions', { model: 'b-5.5', messages: USER, tools: [FN_TOOL], reasoning_effort: 'none' });
    expect(ok.status).toBe(200);
    await ok.json();
  });

  it('tools on b-6-mini (no effort none): refused, pointing to /v1/responses', async () => {
    const body = await refused('/v1/chat/completions', { model: 'b-6-mini', messages: USER, tools: [FN_TOOL], reasoning_effort: 'low' });
    expect(body.error.message).toContain('/v1/responses');
  });
});

describe('messages door refusals (messages error shape)', () => {
  const base = { model: 'a-top-5.5', max_tokens: 64, messages: USER };
  const refusedM = (body: unknown, headers: Record<string, string> = A_VERSION) => refused('/v1/messages', body, headers, 'messages');

  it('speed fast', async () => {
    await refusedM({ ...base, speed: 'fast' });
  });
  it('service_tier priority', async () => {
    await refusedM({ ...base, service_tier: 'priority' });
  });
  it('a fallbacks field', async () => {
    await refusedM({ ...base, fallbacks: [{ model: 'a-high-5.5' }] });
  });
  it('an anthropic-beta header naming fallback', async () => {
    await refusedM(base, { ...A_VERSION, 'anthropic-beta': 'prompt-caching-2024-07-31,server-side-fallback-2026-01-01' });
  });
  it('a stand-alone code_execution_20250825 tool', async () => {
    const body = await refusedM({ ...base, tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] });
    expect(body.error.message).toContain('code_execution_20250825');
  });
  it('an unknown server tool type', async () => {
    const body = await refusedM({ ...base, tools: [{ type: 'teleporter_20270101', name: 'teleporter' }] });
    expect(body.error.message).toContain('teleporter_20270101');
  });
  it('a missing anthropic-version header', async () => {
    const body = await refusedM(base, {});
    expect(body.error.message).toContain('anthropic-version');
  });
  it('a missing max_tokens (never filled in on this door)', async () => {
    const body = await refusedM({ model: 'a-top-5.5', messages: USER });
    expect(body.error.message).toContain('max_tokens');
  });
  it('allowed: a user tool, web_search and bash tools, service_tier standard_only, speed standard', async () => {
    const res = await post(
      t,
      '/v1/messages',
      {
        ...base,
        speed: 'standard',
        service_tier: 'standard_only',
        tools: [
          { name: 'lookup', input_schema: { type: 'object', properties: {} } },
          { type: 'web_search_20250305', name: 'web_search', max_uses: 1 },
          { type: 'bash_20250124', name: 'bash' },
        ],
      },
      A_VERSION,
    );
    expect(res.status).toBe(200);
    await res.json();
  });
});

describe('responses door refusals', () => {
  const base = { model: 'b-5', input: 'hi' };
  it('background: true', async () => {
    await refused('/v1/responses', { ...base, background: true });
  });
  it('service_tier flex', async () => {
    await refused('/v1/responses', { ...base, service_tier: 'flex' });
  });
  it.each(['code_interpreter', 'image_generation', 'local_shell', 'shell'])('the %s tool', async (type) => {
    const body = await refused('/v1/responses', { ...base, tools: [{ type }] });
    expect(body.error.message).toContain(type);
  });
  it('an unknown tool type', async () => {
    const body = await refused('/v1/responses', { ...base, tools: [{ type: 'time_machine' }] });
    expect(body.error.message).toContain('time_machine');
  });
  it('web_search_preview on b-4.1', async () => {
    await refused('/v1/responses', { model: 'b-4.1', input: 'hi', tools: [{ type: 'web_search_preview' }] });
  });
  it('web_search on b-4.1-mini', async () => {
    await refused('/v1/responses', { model: 'b-4.1-mini', input: 'hi', tools: [{ type: 'web_search' }] });
  });
  it('a missing input', async () => {
    const body = await refused('/v1/responses', { model: 'b-5', messages: USER });
    expect(body.error.message).toContain('input');
  });
  it('allowed: web_search_preview on b-5, web_search on b-4.1', async () => {
    for (const body of [
      { model: 'b-5', input: 'hi', tools: [{ type: 'web_search_preview' }] },
      { model: 'b-4.1', input: 'hi', tools: [{ type: 'web_search' }] },
    ]) {
      const res = await post(t, '/v1/responses', body);
      expect(res.status).toBe(200);
      await res.json();
    }
  });
});

describe('a refusal names the field it is about', () => {
  const sdk = () => new OpenAI({ apiKey: t.apiKey, baseURL: `${t.url}/v1`, maxRetries: 0 });
  /** The official SDK's error for a call refused before any vendor saw it. */
  async function sdkRefusal(call: (c: OpenAI) => Promise<unknown>): Promise<InstanceType<typeof OpenAI.BadRequestError>> {
    const sent = t.sim.received.length;
    const err = await call(sdk()).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(t.sim.received.length, 'a vendor was called').toBe(sent);
    return err as InstanceType<typeof OpenAI.BadRequestError>;
  }

  it('a body field (chat door), as the SDK reads it', async () => {
    const err = await sdkRefusal((c) =>
      c.chat.completions.create({ model: 'b-5', messages: [{ role: 'user', content: 'hi' }], service_tier: 'flex' }),
    );
    expect(err.param).toBe('service_tier');
    expect(err.message).toContain('service_tier "flex"');
  });

  it("a tool's type, at its place in the list (responses door)", async () => {
    const err = await sdkRefusal((c) =>
      c.responses.create({
        model: 'b-5',
        input: 'hi',
        tools: [{ type: 'web_search' }, { type: 'code_interpreter', container: { type: 'auto' } }],
      }),
    );
    expect(err.param).toBe('tools[1].type');
  });

  it('a nested field, by its dotted path', async () => {
    const body = await refused('/v1/responses', { model: 'b-5', input: 'hi', reasoning: { effort: 'low', model: 'b-5-pro' } });
    expect(body.error.param).toBe('reasoning.model');
  });
});

describe('vendor-side refusals pass through', () => {
  it('max_tokens to b-5 on the chat door reaches the vendor once, comes back 400 unchanged, nothing charged', async () => {
    const before = await t.balance();
    const n = t.received('b').length;
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, max_tokens: 100 });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('0');
    // The vendor's own body, byte for byte (chat shape on both sides).
    expect(await res.json()).toEqual({
      error: {
        message: 'max_tokens is not supported with this model. Use max_completion_tokens instead.',
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });
    const got = t.received('b').slice(n);
    expect(got).toHaveLength(1);
    expect(got[0]!.route).toBe('b0');
    expect((got[0]!.body as any).max_tokens).toBe(100); // not renamed
    expect(await t.balance()).toBe(before);
    expect(await t.held()).toBe(0n);
  });

  it('temperature 0.5 to b-5 on the responses door: the vendor refuses, passed through once', async () => {
    const before = await t.balance();
    const n = t.received('b').length;
    const res = await post(t, '/v1/responses', { model: 'b-5', input: 'hi', temperature: 0.5 });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('temperature');
    expect(t.received('b').slice(n)).toHaveLength(1);
    expect(await t.balance()).toBe(before);
  });

  it('max_completion_tokens to b-5 is accepted (the rule is about max_tokens only)', async () => {
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER, max_completion_tokens: 100 });
    expect(res.status).toBe(200);
    await res.json();
  });
});
