// End to end with the official SDK clients over loopback: the chat door (vendor A translated, vendors B–E
// passed through), the messages door and the responses door, each plain, streaming and with a tool round trip.
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { anthropic, openai } from './e2e.ts';

let t: TestGateway;
let oa: OpenAI;
let an: Anthropic;
beforeAll(async () => {
  t = await startTestGateway();
  oa = openai(t);
  an = anthropic(t);
});
afterAll(() => t?.close());

const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

// 1×1 transparent PNG.
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

/** Vendor and a chat-door model of it; A is translated, the rest are passed through. */
const CHAT_MODELS = [
  ['a', 'a-top-5.5'],
  ['b', 'b-4.1'],
  ['c', 'c-flash-3'],
  ['d', 'd-4'],
  ['e', 'e-open-70b'],
] as const;

describe('chat door with the openai SDK', () => {
  for (const [vendor, model] of CHAT_MODELS) {
    describe(`vendor ${vendor.toUpperCase()} (${model})`, () => {
      it('plain completion', async () => {
        const n = t.received(vendor).length;
        const { data, response } = await oa.chat.completions
          .create({ model, messages: [{ role: 'user', content: 'Hello there' }] })
          .withResponse();
        expect(response.headers.get('x-gateway-fallback-depth')).toBe('0');
        expect(data.object).toBe('chat.completion');
        expect(data.model).toBe(model);
        expect(data.choices[0]!.message.role).toBe('assistant');
        expect(data.choices[0]!.message.content).toBe(`Simulated reply from ${model}: Hello there`);
        expect(data.choices[0]!.finish_reason).toBe('stop');
        expect(data.usage!.total_tokens).toBe(data.usage!.prompt_tokens + data.usage!.completion_tokens);
        expect(data.usage!.prompt_tokens).toBeGreaterThan(0);
        const got = t.received(vendor).slice(n);
        expect(got).toHaveLength(1);
        expect(got[0]!.path).toBe(vendor === 'a' ? '/v1/messages' : '/v1/chat/completions');
        if (vendor !== 'a') {
          // Passthrough: the vendor received the client's body as sent, with the standard tier named where a
          // vendor would read none as auto (config/doors.yaml rewrite); vendor E with the output limit its
          // servers need to stay within the hold (config/billing.yaml reservation.output_cap_written).
          const written = vendor === 'e' ? { max_tokens: 16_384 } : { service_tier: 'default' };
          expect(got[0]!.body).toEqual({ model, messages: [{ role: 'user', content: 'Hello there' }], ...written });
        }
        // The vendor's own credential, never the client's key.
        expect(JSON.stringify(got[0]!.headers)).toContain(`vendor-${vendor}-secret`);
        expect(JSON.stringify(got[0]!.headers)).not.toContain(t.apiKey);
      });

      it('streaming without include_usage: text assembled, no usage chunk reaches the client', async () => {
        const n = t.received(vendor).length;
        const stream = await oa.chat.completions.create({
          model,
          stream: true,
          messages: [{ role: 'user', content: 'Stream this please [[sim:long=5]]' }],
        });
        let text = '';
        const chunks: OpenAI.ChatCompletionChunk[] = [];
        for await (const chunk of stream) {
          chunks.push(chunk);
          text += chunk.choices[0]?.delta?.content ?? '';
        }
        expect(text).toBe(`Simulated reply from ${model}: Stream this please word1 word2 word3 word4 word5`);
        expect(chunks.length).toBeGreaterThan(5);
        expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
        expect(chunks.some((c) => c.usage)).toBe(false);
        expect(chunks.some((c) => c.choices.length === 0)).toBe(false);
        expect(chunks.filter((c) => c.choices[0]?.finish_reason === 'stop')).toHaveLength(1);
        // One id for the whole stream, the vendor's (never invented per chunk).
        expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
        const got = t.received(vendor).slice(n);
        expect(got).toHaveLength(1);
        expect((got[0]!.body as any).stream).toBe(true);
      });

      it('streaming with include_usage: one usage chunk with empty choices, at the end', async () => {
        const stream = await oa.chat.completions.create({
          model,
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'Count for me [[sim:usage input=42 output=7]]' }],
        });
        const chunks: OpenAI.ChatCompletionChunk[] = [];
        let text = '';
        for await (const chunk of stream) {
          chunks.push(chunk);
          text += chunk.choices[0]?.delta?.content ?? '';
        }
        expect(text).toBe(`Simulated reply from ${model}: Count for me`);
        const withUsage = chunks.filter((c) => c.usage);
        expect(withUsage).toHaveLength(1);
        expect(chunks[chunks.length - 1]).toBe(withUsage[0]);
        expect(withUsage[0]!.choices).toEqual([]);
        expect(withUsage[0]!.usage).toMatchObject({ prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 });
      });

      it('tool call round trip: tool_calls out, tool result back in, text answer', async () => {
        const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Seoul? [[sim:tool]]' }];
        const first = await oa.chat.completions.create({ model, messages, tools: [WEATHER_TOOL] });
        const choice = first.choices[0]!;
        expect(choice.finish_reason).toBe('tool_calls');
        const calls = choice.message.tool_calls!;
        expect(calls).toHaveLength(1);
        const call = calls[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
        expect(call.type).toBe('function');
        expect(call.function.name).toBe('get_weather');
        expect(JSON.parse(call.function.arguments)).toEqual({ city: 'sim' });
        expect(call.id).toMatch(/\S/);

        const n = t.received(vendor).length;
        messages.push(choice.message as OpenAI.ChatCompletionAssistantMessageParam, {
          role: 'tool',
          tool_call_id: call.id,
          content: 'Sunny, 21 degrees',
        });
        const second = await oa.chat.completions.create({ model, messages, tools: [WEATHER_TOOL] });
        expect(second.choices[0]!.finish_reason).toBe('stop');
        expect(second.choices[0]!.message.content).toBe(`Simulated reply from ${model}: tool result: Sunny, 21 degrees`);
        const sent = t.received(vendor)[n]!.body as any;
        if (vendor === 'a') {
          // The tool_use id and the tool_result that answers it, in native blocks.
          expect(sent.messages[1]).toEqual({
            role: 'assistant',
            content: [{ type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'sim' } }],
          });
          expect(sent.messages[2]).toEqual({
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 degrees' }],
          });
        } else {
          expect(sent.messages[2]).toEqual({ role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 degrees' });
        }
      });
    });
  }

  it('streamed tool call on vendor A: per-index deltas assemble to one call', async () => {
    const stream = await oa.chat.completions.create({
      model: 'a-top-5.5',
      stream: true,
      tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: 'Weather? [[sim:tool]]' }],
    });
    const args: Record<number, { id?: string; name?: string; arguments: string }> = {};
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
        const slot = (args[tc.index] ??= { arguments: '' });
        if (tc.id) slot.id = tc.id;
        if (tc.function?.name) slot.name = tc.function.name;
        slot.arguments += tc.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    expect(Object.keys(args)).toEqual(['0']);
    expect(args[0]!.name).toBe('get_weather');
    expect(args[0]!.id).toMatch(/^toolu_/);
    expect(JSON.parse(args[0]!.arguments)).toEqual({ city: 'sim' });
  });

  it('image input: a data: URI image_url part reaches vendor A as a native base64 image block', async () => {
    const n = t.received('a').length;
    const res = await oa.chat.completions.create({
      model: 'a-top-5.5',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_B64}` } },
          ],
        },
      ],
    });
    expect(res.choices[0]!.message.content).toBe('Simulated reply from a-top-5.5: What is in this picture?');
    const sent = t.received('a')[n]!.body as any;
    expect(sent.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_B64 } },
        ],
      },
    ]);
  });

  it('an SDK sees a gateway refusal as a 400 BadRequestError', async () => {
    const err = await oa.chat.completions
      .create({ model: 'b-5', messages: [{ role: 'user', content: 'hi' }], service_tier: 'priority' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as { status?: number }).status).toBe(400);
    expect((err as any).error?.type ?? (err as any).type).toBe('invalid_request_error');
  });
});

describe('messages door with the native SDK', () => {
  it('plain message; the SDK base URL is the gateway URL without /v1', async () => {
    const n = t.received('a').length;
    const msg = await an.messages.create({ model: 'a-top-5.5', max_tokens: 256, messages: [{ role: 'user', content: 'Hello native' }] });
    expect(msg.type).toBe('message');
    expect(msg.role).toBe('assistant');
    expect(msg.stop_reason).toBe('end_turn');
    const text = msg.content
      .filter((b) => b.type === 'text')
      .map((b) => (b as Anthropic.TextBlock).text)
      .join('');
    expect(text).toBe('Simulated reply from a-top-5.5: Hello native');
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    const got = t.received('a').slice(n);
    expect(got).toHaveLength(1);
    // Passed through untranslated but for the standard tier named; the SDK's version header (its own date) reached the vendor.
    expect(got[0]!.body).toEqual({
      model: 'a-top-5.5',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Hello native' }],
      service_tier: 'standard_only',
    });
    expect(got[0]!.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    // The vendor sees the gateway's credential, never the client's key.
    expect(got[0]!.headers['x-api-key']).toBe('vendor-a-secret');
    expect(JSON.stringify(got[0]!.headers)).not.toContain(t.apiKey);
  });

  it('the x-api-key header is accepted on the messages door', async () => {
    const res = await fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a-top-5.5', max_tokens: 32, messages: [{ role: 'user', content: 'Key header' }] }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).content[0].text).toBe('Simulated reply from a-top-5.5: Key header');
  });

  it('streaming with .stream(): text events assemble the answer; finalMessage has usage', async () => {
    const stream = an.messages.stream({
      model: 'a-top-5.5',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Stream natively [[sim:long=4]]' }],
    });
    let text = '';
    stream.on('text', (d) => {
      text += d;
    });
    const final = await stream.finalMessage();
    expect(text).toBe('Simulated reply from a-top-5.5: Stream natively word1 word2 word3 word4');
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBeGreaterThan(1);
  });

  it('streaming with stream: true yields the native events in order', async () => {
    const events = await an.messages.create({
      model: 'a-top-5.5',
      max_tokens: 256,
      stream: true,
      messages: [{ role: 'user', content: 'Raw events' }],
    });
    const types: string[] = [];
    for await (const ev of events) types.push(ev.type);
    expect(types[0]).toBe('message_start');
    expect(types[types.length - 1]).toBe('message_stop');
    expect(types).toContain('content_block_delta');
    expect(types).toContain('message_delta');
  });

  it('tool round trip', async () => {
    const tools: Anthropic.Tool[] = [
      {
        name: 'lookup',
        description: 'Look it up',
        input_schema: { type: 'object', properties: { term: { type: 'string' } }, required: ['term'] },
      },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Look up gateways [[sim:tool]]' }];
    const first = await an.messages.create({ model: 'a-high-4.8', max_tokens: 512, tools, messages });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(use.name).toBe('lookup');
    expect(use.input).toEqual({ term: 'sim' });
    messages.push({ role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'a gateway is a proxy' }] });
    const second = await an.messages.create({ model: 'a-high-4.8', max_tokens: 512, tools, messages });
    expect(second.stop_reason).toBe('end_turn');
    const text = second.content.find((b) => b.type === 'text') as Anthropic.TextBlock;
    expect(text.text).toBe('Simulated reply from a-high-4.8: tool result: a gateway is a proxy');
  });
});

describe('responses door with the openai SDK', () => {
  it('plain response', async () => {
    const n = t.received('b').length;
    const res = await oa.responses.create({ model: 'b-pro-5', input: 'Hello responses' });
    expect(res.object).toBe('response');
    expect(res.status).toBe('completed');
    expect(res.output_text).toBe('Simulated reply from b-pro-5: Hello responses');
    expect(res.usage!.input_tokens).toBeGreaterThan(0);
    const got = t.received('b').slice(n);
    expect(got).toHaveLength(1);
    expect(got[0]!.path).toBe('/v1/responses');
    expect(got[0]!.body).toEqual({ model: 'b-pro-5', input: 'Hello responses', service_tier: 'default' });
  });

  it('streaming response: deltas assemble the text; one completed event with usage', async () => {
    const stream = await oa.responses.create({ model: 'b-5', input: 'Stream responses [[sim:long=3]]', stream: true });
    let text = '';
    const types: string[] = [];
    let completed: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    expect(text).toBe('Simulated reply from b-5: Stream responses word1 word2 word3');
    expect(types[0]).toBe('response.created');
    expect(types.filter((x) => x === 'response.completed')).toHaveLength(1);
    expect(completed!.usage!.output_tokens).toBeGreaterThan(0);
  });

  it('function tool round trip', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      { type: 'function', name: 'get_weather', parameters: WEATHER_TOOL.function.parameters, strict: false },
    ];
    const first = await oa.responses.create({ model: 'b-5', input: 'Weather in Busan? [[sim:tool]]', tools });
    const call = first.output.find((i) => i.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.name).toBe('get_weather');
    expect(JSON.parse(call.arguments)).toEqual({ city: 'sim' });
    const second = await oa.responses.create({
      model: 'b-5',
      tools,
      input: [
        { role: 'user', content: 'Weather in Busan? [[sim:tool]]' },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: 'Rain' },
      ],
    });
    expect(second.output_text).toBe('Simulated reply from b-5: tool result: Rain');
  });
});
