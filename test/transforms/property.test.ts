import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../engine/core/errors.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import { answerTransforms, streamTranslators, usageReaders } from '../helpers/chain-steps.ts';
import { makeCall, toNative } from './helpers.ts';

const json = fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<unknown>;
const part = fc.oneof(
  json,
  fc.record(
    {
      type: fc.constantFrom('text', 'image_url', 'file', 'refusal', 'weird'),
      text: json,
      image_url: json,
      file: json,
      cache_control: json,
    },
    { requiredKeys: ['type'] },
  ),
);
const message = fc.record(
  {
    role: fc.oneof(fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool', 'function'), json),
    content: fc.oneof(json, fc.array(part, { maxLength: 3 })),
    tool_calls: json,
    tool_call_id: json,
    thinking_blocks: json,
    cache_control: json,
  },
  { requiredKeys: ['role'] },
);
const chatBody = fc.record(
  {
    messages: fc.oneof(json, fc.array(message, { maxLength: 4 })),
    tools: json,
    tool_choice: fc.oneof(json, fc.constantFrom('auto', 'none', 'required')),
    parallel_tool_calls: json,
    stop: json,
    max_tokens: json,
    reasoning_effort: fc.oneof(json, fc.constantFrom('none', 'low', 'high')),
    response_format: json,
    cache_control: json,
    n: json,
    user: json,
  },
  { requiredKeys: [] },
);

// Well-formed chat bodies, so the output property is checked on many successful translations.
const cc = fc.option(fc.constantFrom({ type: 'ephemeral' }, { type: 'ephemeral', ttl: '1h' }, { type: 'ephemeral', ttl: '5m', extra: 1 }), {
  nil: undefined,
});
const textPart = fc.record(
  { type: fc.constant('text'), text: fc.string({ minLength: 1 }), cache_control: cc },
  { requiredKeys: ['type', 'text'] },
);
const goodBody = fc.record(
  {
    messages: fc.array(
      fc.oneof(
        fc.record({
          role: fc.constantFrom('system', 'developer'),
          content: fc.oneof(fc.string({ minLength: 1 }), fc.array(textPart, { minLength: 1, maxLength: 2 })),
        }),
        fc.record(
          {
            role: fc.constantFrom('user', 'assistant'),
            content: fc.oneof(fc.string({ minLength: 1 }), fc.array(textPart, { minLength: 1, maxLength: 2 })),
            cache_control: cc,
          },
          { requiredKeys: ['role', 'content'] },
        ),
      ),
      { minLength: 1, maxLength: 5 },
    ),
    stop: fc.oneof(fc.string(), fc.array(fc.string(), { maxLength: 3 })),
    max_tokens: fc.integer({ min: 1, max: 100000 }),
    max_completion_tokens: fc.integer({ min: 1, max: 100000 }),
    reasoning_effort: fc.constantFrom('none', 'low', 'medium', 'high', 'max'),
    parallel_tool_calls: fc.boolean(),
    tool_choice: fc.constantFrom('auto', 'none', 'required'),
    tools: fc.constant([
      { type: 'function', function: { name: 'f', parameters: { type: 'object' } }, cache_control: { type: 'ephemeral' } },
    ]),
    n: fc.constant(1),
    user: fc.string(),
    cache_control: cc,
    stream: fc.boolean(),
    stream_options: fc.constant({ include_usage: true }),
  },
  { requiredKeys: ['messages', 'tools'] },
);

const onlyGatewayErrors = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    expect((e as GatewayError).status).toBe(400);
  }
};

describe('properties', () => {
  it('the vendor A request chain never throws anything but a 400 GatewayError', () => {
    fc.assert(
      fc.property(chatBody, (body) => onlyGatewayErrors(() => toNative(body as JsonObject))),
      { numRuns: 500 },
    );
  });

  it('a translated well-formed body never carries a chat-only field or a non-native cache_control', () => {
    fc.assert(
      fc.property(goodBody, (body) => {
        const out = toNative(body as unknown as JsonObject);
        for (const k of ['stop', 'parallel_tool_calls', 'reasoning_effort', 'max_completion_tokens', 'n', 'user'])
          expect(out).not.toHaveProperty(k);
        expect(typeof out.max_tokens).toBe('number');
        const text = JSON.stringify(out);
        for (const m of text.matchAll(/"cache_control":(\{[^}]*\})/g)) {
          expect(Object.keys(JSON.parse(m[1]!)).every((k) => k === 'type' || k === 'ttl')).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('stream translators and usage readers never throw on arbitrary events and answers', () => {
    const events = fc.array(
      fc.record({
        event: fc.option(
          fc.constantFrom('message_start', 'content_block_start', 'content_block_delta', 'message_delta', 'error', 'response.completed'),
          { nil: undefined },
        ),
        data: fc.oneof(
          fc.string(),
          json.map((v) => JSON.stringify(v) ?? 'null'),
          fc.constant('[DONE]'),
        ),
      }),
      { maxLength: 10 },
    );
    fc.assert(
      fc.property(events, json, (evs, answer) => {
        for (const name of Object.keys(streamTranslators)) {
          const t = streamTranslators[name]!(makeCall({ model: 'a', messages: [], stream: true }));
          for (const e of evs) t.push(e.event ? { event: e.event, data: e.data } : { data: e.data });
          t.end();
          const u = t.usage();
          for (const v of [u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens])
            expect(Number.isFinite(v) && v >= 0).toBe(true);
        }
        const obj = (typeof answer === 'object' && answer !== null && !Array.isArray(answer) ? answer : { value: answer }) as JsonObject;
        for (const read of Object.values(usageReaders)) read(obj);
        for (const transform of Object.values(answerTransforms)) transform(obj, makeCall({ model: 'a', messages: [] }));
      }),
      { numRuns: 300 },
    );
  });
});
