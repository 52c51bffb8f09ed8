import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../engine/core/types.ts';
import { answerTransforms } from '../helpers/chain-steps.ts';
import { makeCall } from './helpers.ts';

const toChat = (answer: JsonObject, client: JsonObject = { model: 'a-high-5-alias', messages: [] }) =>
  answerTransforms['messages-to-chat']!(answer, makeCall(client));

const native = (over: JsonObject = {}): JsonObject => ({
  id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
  type: 'message',
  role: 'assistant',
  model: 'a-high-5-20260101',
  content: [{ type: 'text', text: 'Hello' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 1000, cache_creation_input_tokens: 50 },
  ...over,
});

describe('messages-to-chat', () => {
  it('builds a chat.completion with the vendor id, the client model id and normalised usage', () => {
    const out = toChat(native());
    expect(out).toEqual({
      id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
      object: 'chat.completion',
      created: Math.floor(Date.parse('2026-10-01T00:00:00Z') / 1000),
      model: 'a-high-5-alias',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1150, completion_tokens: 20, total_tokens: 1170, prompt_tokens_details: { cached_tokens: 1000 } },
    });
  });

  it('returns tool calls, thinking blocks with signatures and null content when there is no text', () => {
    const out = toChat(
      native({
        stop_reason: 'tool_use',
        content: [
          { type: 'thinking', thinking: 'Check the weather.', signature: 'sig-abc' },
          { type: 'redacted_thinking', data: 'enc' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Seoul' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { location: 'Busan' } },
        ],
      }),
    );
    const choice = (out.choices as JsonObject[])[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message).toEqual({
      role: 'assistant',
      content: null,
      reasoning_content: 'Check the weather.',
      thinking_blocks: [
        { type: 'thinking', thinking: 'Check the weather.', signature: 'sig-abc' },
        { type: 'redacted_thinking', data: 'enc' },
      ],
      tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Seoul"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Busan"}' } },
      ],
    });
  });

  it('joins several text blocks', () => {
    const out = toChat(
      native({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    );
    expect(((out.choices as JsonObject[])[0]!.message as JsonObject).content).toBe('ab');
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['pause_turn', 'stop'],
    ['model_context_window_exceeded', 'length'],
    ['some_future_reason', 'stop'],
    [null, 'stop'],
  ])('maps stop_reason %s to finish_reason %s', (stop, finish) => {
    expect((toChat(native({ stop_reason: stop })).choices as JsonObject[])[0]!.finish_reason).toBe(finish);
  });
});
