import { describe, expect, it } from 'vitest';
import { usageReaders } from '../../transforms/index.ts';

describe('usage normalisation (input_tokens is uncached input)', () => {
  it('vendor A: input already excludes cache tokens', () => {
    expect(
      usageReaders['messages-usage']({
        id: 'msg_1',
        usage: { input_tokens: 50, cache_creation_input_tokens: 1000, cache_read_input_tokens: 4000, output_tokens: 300, server_tool_use: { web_search_requests: 3 } },
      }),
    ).toEqual({ input_tokens: 50, cache_write_tokens: 1000, cache_read_tokens: 4000, output_tokens: 300, web_search_calls: 3, file_search_calls: 0 });
  });

  it('vendor A: cache writes from the per-TTL breakdown, compaction added, advisor listed apart', () => {
    const u = usageReaders['messages-usage']({
      usage: {
        input_tokens: 100,
        output_tokens: 10,
        cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 30 },
        iterations: [
          { type: 'message', input_tokens: 100, output_tokens: 10 },
          { type: 'compaction', input_tokens: 5000, output_tokens: 400, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
          { type: 'advisor_message', model: 'a-top-5', input_tokens: 800, cache_read_input_tokens: 200, cache_creation_input_tokens: 0, output_tokens: 500 },
        ],
      },
    });
    expect(u).toMatchObject({ input_tokens: 5100, output_tokens: 410, cache_write_tokens: 50 });
    expect(u.advisor).toEqual([{ model: 'a-top-5', input_tokens: 1000, output_tokens: 500 }]);
  });

  it('chat format (vendors B–E): prompt_tokens includes cached tokens', () => {
    expect(
      usageReaders['chat-usage']({ usage: { prompt_tokens: 2000, completion_tokens: 30, total_tokens: 2030, prompt_tokens_details: { cached_tokens: 1536 } } }),
    ).toEqual({ input_tokens: 464, cache_read_tokens: 1536, cache_write_tokens: 0, output_tokens: 30, web_search_calls: 0, file_search_calls: 0 });
    expect(usageReaders['chat-usage']({ usage: { prompt_tokens: 12, total_tokens: 12 } })).toMatchObject({ input_tokens: 12, output_tokens: 0 });
  });

  it('responses format: input_tokens includes cached tokens; server tools counted from output', () => {
    expect(
      usageReaders['responses-usage']({
        id: 'resp_1',
        output: [{ type: 'web_search_call', action: { type: 'search' } }, { type: 'web_search_call' }, { type: 'file_search_call' }, { type: 'message' }],
        usage: { input_tokens: 900, input_tokens_details: { cached_tokens: 600 }, output_tokens: 80, total_tokens: 980 },
      }),
    ).toEqual({ input_tokens: 300, cache_read_tokens: 600, cache_write_tokens: 0, output_tokens: 80, web_search_calls: 2, file_search_calls: 1 });
  });

  it('never reports negative or NaN buckets for odd figures', () => {
    const u = usageReaders['chat-usage']({ usage: { prompt_tokens: 10, prompt_tokens_details: { cached_tokens: 50 }, completion_tokens: 'x' } });
    expect(u).toMatchObject({ input_tokens: 0, cache_read_tokens: 10, output_tokens: 0 });
  });
});
