import { readFileSync } from 'node:fs';
import { countTokens as o200kTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../engine/core/types.ts';
import { boundTokens } from '../../transforms/util/token-bound.ts';
import { streamTranslators } from '../helpers/chain-steps.ts';
import { framePayloads, makeCall, parseSseText } from './helpers.ts';

const recorded = parseSseText(readFileSync(new URL('./fixtures/two-tool-calls.sse', import.meta.url), 'utf8'));
const translator = (client: JsonObject = {}) =>
  streamTranslators['message-events-to-chat-chunks']!(makeCall({ model: 'a-high-5', messages: [], stream: true, ...client }));

describe('message-events-to-chat-chunks', () => {
  it('emits frames as each event arrives, not at the end', () => {
    const t = translator();
    const perEvent = recorded.map((e) => t.push(e));
    const types = recorded.map((e) => JSON.parse(e.data).type as string);
    // message_start gives the role chunk at once; every text or argument delta gives its own frame.
    expect(perEvent[0]).toHaveLength(1);
    recorded.forEach((e, i) => {
      const d = JSON.parse(e.data);
      if (d.type === 'content_block_delta' && (d.delta.text || d.delta.partial_json || d.delta.thinking))
        expect(perEvent[i]).toHaveLength(1);
    });
    expect(perEvent[types.indexOf('message_delta')]).toHaveLength(1);
    expect(t.end()).toEqual(['data: [DONE]\n\n']);
  });

  it('translates the recorded stream with two tool calls', () => {
    const t = translator();
    const frames = recorded.flatMap((e) => t.push(e));
    const chunks = framePayloads(frames);
    for (const c of chunks) {
      expect(c.id).toBe('msg_01XFDUDYJgAACzvnptvVoYEL');
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.model).toBe('a-high-5');
    }
    const deltas = chunks.map((c) => (c.choices as JsonObject[])[0]!.delta as JsonObject);
    expect(deltas[0]).toEqual({ role: 'assistant', content: '' });
    expect(
      deltas
        .filter((d) => d.content)
        .map((d) => d.content)
        .join(''),
    ).toBe('Let me check both cities.');
    expect(
      deltas
        .filter((d) => d.reasoning_content)
        .map((d) => d.reasoning_content)
        .join(''),
    ).toBe('Need weather for two cities.');
    expect(deltas.find((d) => d.thinking_blocks)?.thinking_blocks).toEqual([
      { type: 'thinking', thinking: 'Need weather for two cities.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
    ]);

    const toolDeltas = deltas.flatMap((d) => (d.tool_calls as JsonObject[] | undefined) ?? []);
    expect(toolDeltas[0]).toEqual({
      index: 0,
      id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
      type: 'function',
      function: { name: 'get_weather', arguments: '' },
    });
    const byIndex = (i: number) => toolDeltas.filter((d) => d.index === i);
    expect(
      byIndex(0)
        .map((d) => (d.function as JsonObject).arguments)
        .join(''),
    ).toBe('{"location": "Seoul"}');
    expect(byIndex(1)[0]).toMatchObject({ id: 'toolu_01SBgyXq9kDZbEkHRqLqTGk3', function: { name: 'get_weather' } });
    expect(
      byIndex(1)
        .map((d) => (d.function as JsonObject).arguments)
        .join(''),
    ).toBe('{"location": "Busan"}');
    // only the first delta of a call carries id and name
    expect(
      byIndex(1)
        .slice(1)
        .every((d) => d.id === undefined && (d.function as JsonObject).name === undefined),
    ).toBe(true);

    const finishes = chunks.map((c) => (c.choices as JsonObject[])[0]!.finish_reason).filter((f) => f !== null);
    expect(finishes).toEqual(['tool_calls']);
    expect(chunks.some((c) => 'usage' in c)).toBe(false);
  });

  it('sends the usage chunk only when the client asked for it', () => {
    const t = translator({ stream_options: { include_usage: true } });
    const frames = recorded.flatMap((e) => t.push(e));
    const last = framePayloads(frames).at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({
      prompt_tokens: 2272,
      completion_tokens: 89,
      total_tokens: 2361,
      prompt_tokens_details: { cached_tokens: 1800 },
    });
  });

  it('reads normalised usage from message_start and message_delta', () => {
    const t = translator();
    recorded.forEach((e) => t.push(e));
    expect(t.usage()).toEqual({
      input_tokens: 472,
      output_tokens: 89,
      cache_read_tokens: 1800,
      cache_write_tokens: 0,
      web_search_calls: 0,
      file_search_calls: 0,
    });
  });

  it('estimates output from streamed text when the stream is cut before the final usage', () => {
    const t = translator();
    const cut = recorded.slice(
      0,
      recorded.findIndex((e) => e.data.includes('"index":2')),
    );
    cut.forEach((e) => t.push(e));
    const usage = t.usage();
    expect(usage.input_tokens).toBe(472);
    const streamed = 'Need weather for two cities.' + 'Let me check both cities.';
    expect(usage.output_tokens).toBe(boundTokens(streamed));
    expect(usage.output_tokens).toBeGreaterThanOrEqual(o200kTokens(streamed));
  });

  it('estimates input from the request when even message_start never came', () => {
    const t = streamTranslators['message-events-to-chat-chunks']!(
      makeCall({ model: 'a', messages: [{ role: 'user', content: 'x'.repeat(400) }] }),
    );
    expect(t.usage().input_tokens).toBeGreaterThanOrEqual(o200kTokens('x'.repeat(400)));
  });

  it('turns a mid-stream error event into one chat-shaped error frame, then ends', () => {
    const t = translator();
    t.push(recorded[0]!);
    const frames = t.push({ event: 'error', data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}' });
    expect(framePayloads(frames)).toEqual([
      { error: { type: 'upstream_error', message: 'Overloaded', code: 'upstream_error', param: null } },
    ]);
    expect(t.push(recorded[5]!)).toEqual([]);
    expect(t.end()).toEqual([]);
  });
});
