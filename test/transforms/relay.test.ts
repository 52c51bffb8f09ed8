import { countTokens as o200kTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../engine/core/types.ts';
import { boundTokens } from '../../transforms/util/token-bound.ts';
import { requestTransforms, streamTranslators } from '../helpers/chain-steps.ts';
import { makeCall, parseSseText } from './helpers.ts';

const chatChunks = [
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"b-5","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}',
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"b-5","choices":[{"index":0,"delta":{"content":"Hi there"},"finish_reason":null}]}',
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"b-5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"b-5","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":7,"total_tokens":1207,"prompt_tokens_details":{"cached_tokens":1024}}}',
  '[DONE]',
];

function relay(client: JsonObject) {
  const call = requestTransforms['ask-stream-usage']!(makeCall({ model: 'b-5', messages: [], stream: true, ...client }));
  return { call, t: streamTranslators['relay-hiding-injected-usage']!(call) };
}

describe('relay-hiding-injected-usage', () => {
  it('hides the usage chunk the gateway asked for, relays the rest verbatim, and reads usage', () => {
    const { t } = relay({});
    const out = chatChunks.map((d) => t.push({ data: d }));
    expect(out[0]).toEqual([`data: ${chatChunks[0]}\n\n`]);
    expect(out[1]).toEqual([`data: ${chatChunks[1]}\n\n`]);
    expect(out[3]).toEqual([]);
    expect(out[4]).toEqual(['data: [DONE]\n\n']);
    expect(t.usage()).toMatchObject({ input_tokens: 176, cache_read_tokens: 1024, output_tokens: 7 });
  });

  it('relays the usage chunk when the client asked for it', () => {
    const { call, t } = relay({ stream_options: { include_usage: true } });
    expect(call.notes.streamUsageInjected).toBeUndefined();
    expect(t.push({ data: chatChunks[3]! })).toEqual([`data: ${chatChunks[3]}\n\n`]);
  });

  it('estimates usage from streamed text when none arrived: by the per-script bound, or exactly for vendor B', () => {
    const { t } = relay({});
    t.push({ data: chatChunks[1]! });
    expect(t.usage().output_tokens).toBe(boundTokens('Hi there'));
    expect(t.usage().output_tokens).toBeGreaterThanOrEqual(o200kTokens('Hi there'));
    const b = streamTranslators['relay-hiding-injected-usage']!(
      makeCall({ model: 'b-5', messages: [], stream: true }, { model: { vendor: 'b' } }),
    );
    b.push({ data: chatChunks[1]!.replace('Hi there', '안녕하세요, 여러분') });
    expect(b.usage().output_tokens).toBe(o200kTokens('안녕하세요, 여러분'));
  });
});

describe('relay-responses', () => {
  const events = parseSseText(
    [
      'event: response.created\ndata: {"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}',
      'event: response.output_item.done\ndata: {"type":"response.output_item.done","output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"x"}}}',
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Answer"}',
      'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search"}},{"type":"web_search_call","id":"ws_2","status":"completed","action":{"type":"open_page"}},{"type":"file_search_call","id":"fs_1","status":"completed"},{"type":"message","id":"msg_1","content":[]}],"usage":{"input_tokens":3000,"input_tokens_details":{"cached_tokens":2000},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":3040}}}',
    ].join('\n\n'),
  );

  it('relays event and data lines verbatim and reads usage and tool calls from response.completed', () => {
    const t = streamTranslators['relay-responses']!(makeCall({ model: 'b-5', input: 'q', stream: true }, { door: 'responses' }));
    const frames = events.map((e) => t.push(e));
    expect(frames[2]).toEqual([`event: response.output_text.delta\ndata: ${events[2]!.data}\n\n`]);
    expect(t.end()).toEqual([]);
    expect(t.usage()).toEqual({
      input_tokens: 1000,
      cache_read_tokens: 2000,
      cache_write_tokens: 0,
      output_tokens: 40,
      reasoning_tokens: 10,
      web_search_calls: 1,
      file_search_calls: 1,
    });
  });

  it('counts finished tool calls when the stream is cut before response.completed', () => {
    const t = streamTranslators['relay-responses']!(makeCall({ model: 'b-5', input: 'q', stream: true }, { door: 'responses' }));
    events.slice(0, 3).forEach((e) => t.push(e));
    expect(t.usage()).toMatchObject({ web_search_calls: 1, output_tokens: boundTokens('Answer') });
  });
});

describe('relay-messages', () => {
  it('relays native events verbatim and reads usage with cache and web searches', () => {
    const events = parseSseText(
      [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":300,"cache_read_input_tokens":0,"output_tokens":1}}}',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":10,"cache_creation_input_tokens":300,"cache_read_input_tokens":0,"output_tokens":55,"server_tool_use":{"web_search_requests":2}}}',
        'event: message_stop\ndata: {"type":"message_stop"}',
      ].join('\n\n'),
    );
    const t = streamTranslators['relay-messages']!(makeCall({ model: 'a', max_tokens: 10, messages: [] }, { door: 'messages' }));
    const frames = events.map((e) => t.push(e));
    expect(frames[1]).toEqual([`event: content_block_delta\ndata: ${events[1]!.data}\n\n`]);
    expect(t.usage()).toEqual({
      input_tokens: 10,
      cache_write_tokens: 300,
      cache_read_tokens: 0,
      output_tokens: 55,
      web_search_calls: 2,
      file_search_calls: 0,
    });
  });
});
