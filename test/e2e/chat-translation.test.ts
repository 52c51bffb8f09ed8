// Every translation rule of the chat door for vendor A, proved by what the simulated vendor RECEIVED over
// HTTP, and the stop reasons mapped back to chat finish_reason (JSON and stream).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { parseSse, post } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const USER = { role: 'user', content: 'Hello' };
const TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

/** Sends a chat body; returns the body vendor A received (exactly one request) and the client's answer. */
async function sentToA(body: Record<string, unknown>): Promise<{ sent: any; answer: any }> {
  const n = t.received('a').length;
  const res = await post(t, '/v1/chat/completions', body);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  const got = t.received('a').slice(n);
  expect(got).toHaveLength(1);
  expect(got[0]!.path).toBe('/v1/messages');
  return { sent: got[0]!.body, answer: body.stream ? parseSse(text) : JSON.parse(text) };
}

describe('chat → native request translation (what vendor A received)', () => {
  it('a minimal call: 8192 max_tokens and the standard tier filled in, content as native blocks, nothing else added', async () => {
    const { sent } = await sentToA({ model: 'a-top-5.5', messages: [USER] });
    expect(sent).toEqual({
      model: 'a-top-5.5',
      max_tokens: 8192,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
      service_tier: 'standard_only',
    });
  });

  it('system message moved to the separate system field', async () => {
    const { sent } = await sentToA({ model: 'a-top-5.5', messages: [{ role: 'system', content: 'Be brief.' }, USER] });
    expect(sent.system).toBe('Be brief.');
    expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }]);
    expect(sent.messages.some((m: any) => m.role === 'system')).toBe(false);
  });

  it('a string stop is wrapped into stop_sequences; an array is carried', async () => {
    const one = await sentToA({ model: 'a-top-5.5', messages: [USER], stop: 'END' });
    expect(one.sent.stop_sequences).toEqual(['END']);
    expect(one.sent).not.toHaveProperty('stop');
    const many = await sentToA({ model: 'a-top-5.5', messages: [USER], stop: ['X', 'Y'] });
    expect(many.sent.stop_sequences).toEqual(['X', 'Y']);
  });

  it('max_completion_tokens and max_tokens are carried as max_tokens', async () => {
    const mct = await sentToA({ model: 'a-top-5.5', messages: [USER], max_completion_tokens: 300 });
    expect(mct.sent.max_tokens).toBe(300);
    expect(mct.sent).not.toHaveProperty('max_completion_tokens');
    const mt = await sentToA({ model: 'a-top-5.5', messages: [USER], max_tokens: 777 });
    expect(mt.sent.max_tokens).toBe(777);
  });

  it('reasoning_effort → output_config.effort; none → low; omitted for a model without effort levels', async () => {
    const high = await sentToA({ model: 'a-top-5.5', messages: [USER], reasoning_effort: 'high' });
    expect(high.sent.output_config).toEqual({ effort: 'high' });
    expect(high.sent).not.toHaveProperty('reasoning_effort');
    const none = await sentToA({ model: 'a-top-5.5', messages: [USER], reasoning_effort: 'none' });
    expect(none.sent.output_config).toEqual({ effort: 'low' });
    const old = await sentToA({ model: 'a-mid-4.5', messages: [USER], reasoning_effort: 'high' });
    expect(old.sent).not.toHaveProperty('output_config');
    expect(old.sent).not.toHaveProperty('reasoning_effort');
  });

  it('temperature and top_p dropped for a drop-sampling model (a-top-5.5), kept for a-mid-4.5', async () => {
    const top = await sentToA({ model: 'a-top-5.5', messages: [USER], temperature: 0.5, top_p: 0.9 });
    expect(top.sent).not.toHaveProperty('temperature');
    expect(top.sent).not.toHaveProperty('top_p');
    expect(top.answer.choices[0].message.content).toBe('Simulated reply from a-top-5.5: Hello');
    const mid = await sentToA({ model: 'a-mid-4.5', messages: [USER], temperature: 0.5, top_p: 0.9 });
    expect(mid.sent.temperature).toBe(0.5);
    expect(mid.sent.top_p).toBe(0.9);
  });

  it('tools → native tools with input_schema', async () => {
    const { sent } = await sentToA({ model: 'a-top-5.5', messages: [USER], tools: [TOOL] });
    expect(sent.tools).toEqual([{ name: 'get_weather', description: 'Weather for a city', input_schema: TOOL.function.parameters }]);
  });

  it('forced tool choice lowered to auto on a lower-forced-tool-choice model (a-top-5.5)', async () => {
    const required = await sentToA({ model: 'a-top-5.5', messages: [USER], tools: [TOOL], tool_choice: 'required' });
    expect(required.sent.tool_choice).toEqual({ type: 'auto' });
    const named = await sentToA({
      model: 'a-top-5.5',
      messages: [USER],
      tools: [TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(named.sent.tool_choice).toEqual({ type: 'auto' });
    // The answer is text: nothing forced the call.
    expect(named.answer.choices[0].finish_reason).toBe('stop');
  });

  it('forced tool choice kept on a model without the rule (a-high-4.8): required → any, named → tool', async () => {
    const required = await sentToA({ model: 'a-high-4.8', messages: [USER], tools: [TOOL], tool_choice: 'required' });
    expect(required.sent.tool_choice).toEqual({ type: 'any' });
    expect(required.answer.choices[0].finish_reason).toBe('tool_calls');
    const named = await sentToA({
      model: 'a-high-4.8',
      messages: [USER],
      tools: [TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(named.sent.tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
    expect(named.answer.choices[0].message.tool_calls[0].function.name).toBe('get_weather');
    const auto = await sentToA({ model: 'a-high-4.8', messages: [USER], tools: [TOOL], tool_choice: 'auto' });
    expect(auto.sent.tool_choice).toEqual({ type: 'auto' });
    const none = await sentToA({ model: 'a-high-4.8', messages: [USER], tools: [TOOL], tool_choice: 'none' });
    expect(none.sent.tool_choice).toEqual({ type: 'none' });
  });

  it('parallel_tool_calls: false → disable_parallel_tool_use on the tool choice', async () => {
    const bare = await sentToA({ model: 'a-high-4.8', messages: [USER], tools: [TOOL], parallel_tool_calls: false });
    expect(bare.sent.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(bare.sent).not.toHaveProperty('parallel_tool_calls');
    const forced = await sentToA({
      model: 'a-high-4.8',
      messages: [USER],
      tools: [TOOL],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    expect(forced.sent.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    // Lowered on a-top-5.5, the flag survives.
    const lowered = await sentToA({
      model: 'a-top-5.5',
      messages: [USER],
      tools: [TOOL],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    expect(lowered.sent.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
  });

  it('cache_control carried on system, user and assistant text parts, tool results, tool definitions and the top level', async () => {
    const cc = { type: 'ephemeral' };
    const cc1h = { type: 'ephemeral', ttl: '1h' };
    const { sent } = await sentToA({
      model: 'a-top-5.5',
      cache_control: cc,
      tools: [{ ...TOOL, cache_control: cc1h }],
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Long system prompt', cache_control: cc }] },
        { role: 'user', content: [{ type: 'text', text: 'Question one', cache_control: cc }] },
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'Let me check', cache_control: cc }],
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Seoul"}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: [{ type: 'text', text: 'Sunny', cache_control: cc }] },
        { role: 'user', content: [{ type: 'text', text: 'Thanks', cache_control: cc1h }] },
      ],
    });
    expect(sent.cache_control).toEqual(cc);
    expect(sent.tools[0].cache_control).toEqual(cc1h);
    expect(sent.system).toEqual([{ type: 'text', text: 'Long system prompt', cache_control: cc }]);
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Question one', cache_control: cc }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check', cache_control: cc },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Seoul' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'Sunny', cache_control: cc }] },
          { type: 'text', text: 'Thanks', cache_control: cc1h },
        ],
      },
    ]);
  });

  it('cache_control on a tool message marks its tool_result block', async () => {
    const { sent } = await sentToA({
      model: 'a-top-5.5',
      messages: [
        USER,
        { role: 'assistant', tool_calls: [{ id: 'toolu_2', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'toolu_2', content: 'Cloudy', cache_control: { type: 'ephemeral' } },
      ],
      tools: [TOOL],
    });
    expect(sent.messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'Cloudy', cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('cache_control set directly on a user or assistant message object is not carried', async () => {
    const { sent } = await sentToA({
      model: 'a-top-5.5',
      messages: [
        { role: 'user', content: 'First', cache_control: { type: 'ephemeral' } },
        { role: 'assistant', content: 'Reply', cache_control: { type: 'ephemeral' } },
        { role: 'user', content: 'Second', cache_control: { type: 'ephemeral' } },
      ],
    });
    expect(JSON.stringify(sent)).not.toContain('cache_control');
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'First' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Reply' }] },
      { role: 'user', content: [{ type: 'text', text: 'Second' }] },
    ]);
  });
});

describe('more of the translation, end to end', () => {
  it('an http image_url becomes a native url image block', async () => {
    const { sent } = await sentToA({
      model: 'a-top-5.5',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
          ],
        },
      ],
    });
    expect(sent.messages[0].content[1]).toEqual({ type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } });
  });

  it('stream_options is consumed, not sent; stream is carried', async () => {
    const { sent } = await sentToA({ model: 'a-top-5.5', messages: [USER], stream: true, stream_options: { include_usage: true } });
    expect(sent.stream).toBe(true);
    expect(sent).not.toHaveProperty('stream_options');
  });

  it('thinking blocks come back with their signature and are replayed before the tool call on the next turn', async () => {
    const first = await sentToA({
      model: 'a-high-4.8',
      tools: [TOOL],
      messages: [{ role: 'user', content: 'Think, then call [[sim:thinking]] [[sim:tool]]' }],
    });
    const message = first.answer.choices[0].message;
    expect(message.thinking_blocks).toEqual([{ type: 'thinking', thinking: expect.any(String), signature: expect.stringMatching(/\S/) }]);
    const call = message.tool_calls[0];
    const second = await sentToA({
      model: 'a-high-4.8',
      tools: [TOOL],
      messages: [
        { role: 'user', content: 'Think, then call [[sim:thinking]] [[sim:tool]]' },
        message,
        { role: 'tool', tool_call_id: call.id, content: 'Done' },
      ],
    });
    expect(second.sent.messages[1].content).toEqual([
      { type: 'thinking', thinking: message.thinking_blocks[0].thinking, signature: message.thinking_blocks[0].signature },
      { type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'sim' } },
    ]);
  });

  it('two streamed tool calls keep separate indexes', async () => {
    const { answer } = await sentToA({
      model: 'a-high-4.8',
      stream: true,
      tools: [TOOL],
      messages: [{ role: 'user', content: 'Two calls [[sim:tools=2]]' }],
    });
    const calls: Record<number, { id?: string; args: string }> = {};
    for (const f of answer) {
      for (const tc of f.data?.choices?.[0]?.delta?.tool_calls ?? []) {
        const slot = (calls[tc.index] ??= { args: '' });
        if (tc.id) slot.id = tc.id;
        slot.args += tc.function?.arguments ?? '';
      }
    }
    expect(Object.keys(calls)).toEqual(['0', '1']);
    expect(calls[0]!.id).not.toBe(calls[1]!.id);
    expect(JSON.parse(calls[0]!.args)).toEqual({ city: 'sim' });
    expect(JSON.parse(calls[1]!.args)).toEqual({ city: 'sim' });
  });
});

describe('vendor A stop reasons → chat finish_reason', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ['end_turn', 'stop', {}],
    ['stop_sequence', 'stop', {}],
    ['max_tokens', 'length', {}],
    ['refusal', 'content_filter', {}],
    ['tool_use', 'tool_calls', { tools: [TOOL] }],
  ];
  const tagFor = (stop: string) => (stop === 'end_turn' ? '' : stop === 'tool_use' ? ' [[sim:tool]]' : ` [[sim:stop=${stop}]]`);

  for (const [stop, finish, extra] of cases) {
    it(`${stop} → ${finish} (JSON and stream)`, async () => {
      const messages = [{ role: 'user', content: `Finish please${tagFor(stop)}` }];
      const json = await sentToA({ model: 'a-top-5.5', messages, ...extra });
      expect(json.answer.choices[0].finish_reason).toBe(finish);
      const streamed = await sentToA({ model: 'a-top-5.5', messages, stream: true, ...extra });
      const finishes = streamed.answer
        .filter((f: any) => f.data?.choices?.[0]?.finish_reason)
        .map((f: any) => f.data.choices[0].finish_reason);
      expect(finishes).toEqual([finish]);
      expect(streamed.answer[streamed.answer.length - 1].data).toBe('[DONE]');
    });
  }

  it('a real max_tokens cut gives length with the text truncated to the budget', async () => {
    const { answer } = await sentToA({
      model: 'a-top-5.5',
      max_tokens: 3,
      messages: [{ role: 'user', content: 'Tell me a long story [[sim:long=50]]' }],
    });
    expect(answer.choices[0].finish_reason).toBe('length');
    expect(answer.choices[0].message.content).toHaveLength(12);
    expect(answer.usage.completion_tokens).toBe(3);
  });
});
