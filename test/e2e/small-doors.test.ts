// The doors people expect beside the model doors: the SDKs' models.retrieve, a base URL opened in a browser, a
// favicon, and a 404 that says when the base URL lost or doubled its /v1.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { post } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

describe('small doors', () => {
  it('models.retrieve answers the model as the list shows it', async () => {
    const openai = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const listed = (await openai.models.list()).data.find((m) => m.id === 'b-6');
    const one = await openai.models.retrieve('b-6');
    expect(listed).toBeDefined();
    expect(one).toEqual(listed);
  });

  it('a model that does not exist is a 404 naming the closest one', async () => {
    const res = await fetch(`${t.url}/v1/models/b-6-minj`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(res.status).toBe(404);
    const body = (await res.json()) as any;
    expect(body.error.type).toBe('model_not_found');
    expect(body.error.suggestion).toBe('b-6-mini');
  });

  it('a model needs a key like the list', async () => {
    expect((await fetch(`${t.url}/v1/models/b-6`)).status).toBe(401);
  });

  it('a base URL without /v1, or with it twice, is named in the 404', async () => {
    const missing = await post(t, '/chat/completions', { model: 'b-6', messages: [] });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.message).toContain('Did you mean POST /v1/chat/completions?');
    const doubled = await post(t, '/v1/v1/messages', { model: 'a-top-5.5' });
    expect(((await doubled.json()) as any).error.message).toContain('Did you mean POST /v1/messages?');
    const videos = await fetch(`${t.url}/videos/abc`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(((await videos.json()) as any).error.message).toContain('Did you mean GET /v1/videos/abc?');
    const nowhere = await post(t, '/nothing/here', {});
    expect(((await nowhere.json()) as any).error.message).toBe('No door at POST /nothing/here.');
  });

  it("a path under the messages door that no route serves is a 404 in that door's error body, as the Anthropic SDK reads it", async () => {
    const anthropic = new Anthropic({ apiKey: t.apiKey, baseURL: t.url, maxRetries: 0 });
    const err = await anthropic.messages
      .countTokens({ model: 'a-top-5.5', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect((err as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: 'No door at POST /v1/messages/count_tokens.' },
    });
    const chat = await post(t, '/v1/chat/completions/extra', {});
    expect(((await chat.json()) as any).error).toMatchObject({
      type: 'not_found_error',
      message: 'No door at POST /v1/chat/completions/extra.',
    });
  });

  it('the base URL points a browser to the dashboard and the API description, and a program too', async () => {
    const page = await fetch(`${t.url}/`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('href="/dashboard"');
    expect(html).toContain('href="/openapi.json"');
    const json = (await (await fetch(`${t.url}/`)).json()) as any;
    expect(json).toEqual({ object: 'service', dashboard: '/dashboard', api_description: '/openapi.json' });
    const icon = await fetch(`${t.url}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toContain('image/svg+xml');
    expect(await icon.text()).toContain('<svg');
  });

  it('an answer whose request a model rule changed says which change, and the vendor saw the changed request', async () => {
    const openai = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }];
    const { response } = await openai.chat.completions
      .create({ model: 'a-top-5.5', messages: [{ role: 'user', content: 'Say hi.' }], temperature: 0.2, tools, tool_choice: 'required' })
      .withResponse();
    expect(response.headers.get('x-service-adjusted')).toBe('temperature dropped, tool_choice=auto');
    const sent = t.sim.received.at(-1)!.body as Record<string, unknown>;
    expect(sent.temperature).toBeUndefined();
    expect(sent.tool_choice).toEqual({ type: 'auto' });
  });

  it('an answer whose request no rule changed carries no such header', async () => {
    const openai = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const { response } = await openai.chat.completions
      .create({
        model: 'a-top-5.5',
        messages: [{ role: 'user', content: 'Say hi.' }],
        tool_choice: 'none',
        tools: [{ type: 'function', function: { name: 'f' } }],
      })
      .withResponse();
    expect(response.headers.get('x-service-adjusted')).toBeNull();
  });
});
