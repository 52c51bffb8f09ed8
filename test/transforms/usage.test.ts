import { describe, expect, it } from 'vitest';
import { imageReadingOf } from '../../engine/catalog/wire-format.ts';
import { emptyUsage, type JsonObject } from '../../engine/core/types.ts';
import { protocols } from '../../transforms/protocols/index.ts';
import { estimateAnswerUsage, estimateUnreadable, IMAGE_TOKENS_ESTIMATE } from '../../transforms/util/estimate.ts';
import { usageReaders } from '../helpers/chain-steps.ts';

/** A chat-completions body's image reading, as the chat door's calls carry it. */
const chatReading = imageReadingOf(protocols['chat-completions']);

describe('usage normalisation (input_tokens is uncached input)', () => {
  it('vendor A: input already excludes cache tokens', () => {
    expect(
      usageReaders['messages-usage']!({
        id: 'msg_1',
        usage: {
          input_tokens: 50,
          cache_creation_input_tokens: 1000,
          cache_read_input_tokens: 4000,
          output_tokens: 300,
          server_tool_use: { web_search_requests: 3 },
        },
      }),
    ).toEqual({
      input_tokens: 50,
      cache_write_tokens: 1000,
      cache_read_tokens: 4000,
      output_tokens: 300,
      web_search_calls: 3,
      file_search_calls: 0,
    });
  });

  it('vendor A: cache writes from the per-TTL breakdown, compaction added, advisor listed apart', () => {
    const u = usageReaders['messages-usage']!({
      usage: {
        input_tokens: 100,
        output_tokens: 10,
        cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 30 },
        iterations: [
          { type: 'message', input_tokens: 100, output_tokens: 10 },
          { type: 'compaction', input_tokens: 5000, output_tokens: 400, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
          {
            type: 'advisor_message',
            model: 'a-top-5',
            input_tokens: 800,
            cache_read_input_tokens: 200,
            cache_creation_input_tokens: 0,
            output_tokens: 500,
          },
        ],
      },
    });
    expect(u).toMatchObject({ input_tokens: 5100, output_tokens: 410, cache_write_tokens: 50 });
    expect(u.advisor).toEqual([{ model: 'a-top-5', input_tokens: 1000, output_tokens: 500 }]);
  });

  it('chat format (vendors B–E): prompt_tokens includes cached tokens', () => {
    expect(
      usageReaders['chat-usage']!({
        usage: { prompt_tokens: 2000, completion_tokens: 30, total_tokens: 2030, prompt_tokens_details: { cached_tokens: 1536 } },
      }),
    ).toEqual({
      input_tokens: 464,
      cache_read_tokens: 1536,
      cache_write_tokens: 0,
      output_tokens: 30,
      web_search_calls: 0,
      file_search_calls: 0,
    });
    expect(usageReaders['embeddings-usage']!({ usage: { prompt_tokens: 12, total_tokens: 12 } })).toMatchObject({
      input_tokens: 12,
      output_tokens: 0,
    });
  });

  // Vendor D counts reasoning apart from completion_tokens, in total_tokens only (a figure its API returned:
  // 10,120 + 1,499 + 2,809 = 14,428). Read as completion_tokens alone, the reasoning was charged nothing.
  it('chat format: reasoning counted apart from completion_tokens (in total_tokens only) is output too', () => {
    const apart = usageReaders['chat-usage']!({
      usage: {
        prompt_tokens: 10_120,
        completion_tokens: 1_499,
        total_tokens: 14_428,
        prompt_tokens_details: { cached_tokens: 128 },
        completion_tokens_details: { reasoning_tokens: 2_809 },
      },
    });
    expect(apart).toMatchObject({ input_tokens: 9_992, cache_read_tokens: 128, output_tokens: 4_308, reasoning_tokens: 2_809 });
    // Reasoning inside completion_tokens (vendor B): the total adds nothing.
    const inside = usageReaders['chat-usage']!({
      usage: { prompt_tokens: 100, completion_tokens: 300, total_tokens: 400, completion_tokens_details: { reasoning_tokens: 250 } },
    });
    expect(inside.output_tokens).toBe(300);
    // A total below prompt + completion, or none, or unreadable, changes nothing.
    const totals: JsonObject[] = [{ total_tokens: 10 }, {}, { total_tokens: 'x' }];
    for (const total of totals) {
      expect(usageReaders['chat-usage']!({ usage: { prompt_tokens: 100, completion_tokens: 300, ...total } }).output_tokens).toBe(300);
    }
  });

  it('responses format: input_tokens includes cached tokens; server tools counted from output', () => {
    expect(
      usageReaders['responses-usage']!({
        id: 'resp_1',
        output: [
          { type: 'web_search_call', action: { type: 'search' } },
          { type: 'web_search_call' },
          { type: 'file_search_call' },
          { type: 'message' },
        ],
        usage: { input_tokens: 900, input_tokens_details: { cached_tokens: 600 }, output_tokens: 80, total_tokens: 980 },
      }),
    ).toEqual({
      input_tokens: 300,
      cache_read_tokens: 600,
      cache_write_tokens: 0,
      output_tokens: 80,
      web_search_calls: 2,
      file_search_calls: 1,
    });
  });

  it('caps a cached count at the prompt, and marks a count it cannot read as unreadable (NaN), never negative', () => {
    const u = usageReaders['chat-usage']!({
      usage: { prompt_tokens: 10, prompt_tokens_details: { cached_tokens: 50 }, completion_tokens: 'x' },
    });
    expect(u).toMatchObject({ input_tokens: 0, cache_read_tokens: 10, output_tokens: NaN });
    for (const bad of [-1, '10', Infinity, {}]) {
      expect(usageReaders['messages-usage']!({ usage: { input_tokens: bad, output_tokens: 5 } }).input_tokens, String(bad)).toBeNaN();
      expect(usageReaders['responses-usage']!({ usage: { input_tokens: 5, output_tokens: bad } }).output_tokens, String(bad)).toBeNaN();
    }
  });

  it('reads a figure that is missing as unreadable, and an image answer still counts its images', () => {
    expect(usageReaders['chat-usage']!({ choices: [] })).toMatchObject({ input_tokens: NaN, output_tokens: NaN });
    expect(usageReaders['messages-usage']!({ content: [] })).toMatchObject({ input_tokens: NaN, output_tokens: NaN });
    expect(usageReaders['image-usage']!({ data: [{ b64_json: 'AAAA' }, { b64_json: 'AAAA' }] })).toMatchObject({
      images: 2,
      input_tokens: NaN,
    });
    // A chat figure without a completion count is unreadable; the embeddings door's never has one: zero output.
    expect(usageReaders['chat-usage']!({ usage: { prompt_tokens: 8, total_tokens: 8 } })).toMatchObject({
      input_tokens: 8,
      output_tokens: NaN,
    });
    expect(usageReaders['embeddings-usage']!({ usage: { prompt_tokens: 8, total_tokens: 8 } })).toMatchObject({
      input_tokens: 8,
      output_tokens: 0,
    });
  });
});

describe('estimateUnreadable', () => {
  const guess = { input_tokens: 700, output_tokens: 300 };

  it('returns a readable figure as it is, without estimating', () => {
    const u = { ...emptyUsage(), input_tokens: 5, output_tokens: 6 };
    expect(estimateUnreadable(u, () => expect.unreachable('estimated a readable figure'), undefined)).toBe(u);
  });

  it('estimates the whole input when any input-side count is unreadable, and keeps a readable output', () => {
    // The readable cache write goes too: the estimate is the whole input, cache included.
    const u = { ...emptyUsage(), input_tokens: 5, cache_read_tokens: NaN, cache_write_tokens: 50, output_tokens: 6 };
    expect(estimateUnreadable(u, () => guess, undefined)).toMatchObject({
      input_tokens: 700,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      output_tokens: 6,
    });
  });

  it('estimates an unreadable output, and leaves out any other unreadable count', () => {
    const u = { ...emptyUsage(), input_tokens: 5, output_tokens: NaN, web_search_calls: NaN, reasoning_tokens: NaN };
    expect(estimateUnreadable(u, () => guess, undefined)).toMatchObject({
      input_tokens: 5,
      output_tokens: 300,
      web_search_calls: 0,
      reasoning_tokens: 0,
    });
  });

  it("estimates an advisor's unreadable counts as the whole call's", () => {
    const u = { ...emptyUsage(), advisor: [{ model: 'm', input_tokens: NaN, output_tokens: 4 }] };
    expect(estimateUnreadable(u, () => guess, undefined).advisor).toEqual([{ model: 'm', input_tokens: 700, output_tokens: 4 }]);
  });

  it("holds each estimated count, an advisor's too, to the hold's bounds, and never caps a count the vendor reported", () => {
    const held = { input_tokens: 500, output_tokens: 2_000 };
    const u = { ...emptyUsage(), input_tokens: NaN, output_tokens: NaN, advisor: [{ model: 'm', input_tokens: NaN, output_tokens: NaN }] };
    expect(estimateUnreadable(u, () => guess, held)).toMatchObject({
      input_tokens: 500,
      output_tokens: 300,
      advisor: [{ model: 'm', input_tokens: 500, output_tokens: 300 }],
    });
    const reported = { ...emptyUsage(), input_tokens: 9_000, output_tokens: NaN };
    expect(estimateUnreadable(reported, () => guess, { input_tokens: 500, output_tokens: 100 })).toMatchObject({
      input_tokens: 9_000,
      output_tokens: 100,
    });
  });

  it('estimates an image part of a message as an image, and what only looks like one as the text it is', () => {
    const long = ' hello'.repeat(5_000);
    const asImage = { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${long}` } }] }] };
    expect(estimateAnswerUsage(asImage, {}, 'b', chatReading).input_tokens).toBeLessThan(2 * IMAGE_TOKENS_ESTIMATE);
    const asText = { messages: [{ role: 'user', content: `data:image/png;${long}` }] };
    const inSchema = { tools: [{ name: 'f', input_schema: { x: { type: 'image', description: long } } }], messages: [] };
    for (const body of [asText, inSchema])
      expect(estimateAnswerUsage(body, {}, 'b', chatReading).input_tokens).toBeGreaterThanOrEqual(5_000);
  });

  it('counts an image an answer returns as an image, not as its base64 text', () => {
    const answer = { data: [{ b64_json: 'A'.repeat(400_000) }] };
    expect(estimateAnswerUsage({ prompt: 'x' }, answer, 'b', chatReading).output_tokens).toBe(IMAGE_TOKENS_ESTIMATE);
    expect(estimateAnswerUsage({ prompt: 'x' }, answer, 'a', chatReading).output_tokens).toBe(IMAGE_TOKENS_ESTIMATE);
  });
});
