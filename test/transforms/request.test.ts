import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../engine/core/errors.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import { countCharacters } from '../../transforms/protocols/media/count-characters.ts';
import { makeCall, run, toNative } from './helpers.ts';

const user = (content: unknown) => ({ role: 'user', content }) as JsonObject;

function rejects(fn: () => unknown, param?: string, text?: RegExp): GatewayError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    const g = e as GatewayError;
    expect(g.status).toBe(400);
    expect(g.type).toBe('invalid_request_error');
    if (param) expect(g.param).toBe(param);
    if (text) expect(g.message).toMatch(text);
    return g;
  }
  throw new Error('expected a 400');
}

describe('system-to-field', () => {
  it('moves a plain system message to a string system field', () => {
    const body = toNative({ messages: [{ role: 'system', content: 'Be brief.' }, user('hi')] });
    expect(body.system).toBe('Be brief.');
    expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
  });

  it('joins system and developer messages as text blocks, keeping cache_control on parts', () => {
    const body = toNative({
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'Long rules', cache_control: { type: 'ephemeral' } }] },
        { role: 'developer', content: 'More rules' },
        user('hi'),
      ],
    });
    expect(body.system).toEqual([
      { type: 'text', text: 'Long rules', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'More rules' },
    ]);
  });

  it('does not carry cache_control set on the system message object', () => {
    const body = toNative({
      messages: [{ role: 'system', content: [{ type: 'text', text: 'S' }], cache_control: { type: 'ephemeral' } }, user('hi')],
    });
    expect(body.system).toEqual([{ type: 'text', text: 'S' }]);
  });

  it('refuses messages that are not an array', () => {
    rejects(() => toNative({ messages: 'hello' }), 'messages');
    rejects(() => toNative({ messages: [null] }), 'messages');
  });
});

describe('messages-to-blocks', () => {
  it('turns image_url data: URIs into base64 sources and http URLs into url sources', () => {
    const body = toNative({
      messages: [
        user([
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
        ]),
      ],
    });
    expect((body.messages as JsonObject[])[0]!.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
  });

  it('refuses images of a type the vendor does not read and non-http URLs', () => {
    rejects(
      () => toNative({ messages: [user([{ type: 'image_url', image_url: { url: 'data:image/bmp;base64,AAAA' } }])] }),
      'messages',
      /image\/bmp/,
    );
    rejects(() => toNative({ messages: [user([{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }])] }), 'messages');
  });

  it('refuses a content part of unknown type', () => {
    rejects(
      () => toNative({ messages: [user([{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }])] }),
      'messages',
      /input_audio/,
    );
    rejects(() => toNative({ messages: [user([{ type: 'hologram' }])] }), 'messages');
  });

  it('round-trips a tool turn: thinking (also signature-only), tool_use with parsed input, merged tool results', () => {
    const body = toNative({
      messages: [
        user('Weather in Seoul and Busan?'),
        {
          role: 'assistant',
          content: null,
          thinking_blocks: [
            { type: 'thinking', thinking: 'Two cities.', signature: 'sig-1' },
            { type: 'thinking', thinking: '', signature: 'sig-only' },
            { type: 'redacted_thinking', data: 'opaque' },
          ],
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Seoul"}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Busan"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
        { role: 'tool', tool_call_id: 'toolu_2', content: [{ type: 'text', text: '21C' }] },
        user('Thanks'),
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } },
        },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Seoul and Busan?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Two cities.', signature: 'sig-1' },
          { type: 'thinking', thinking: '', signature: 'sig-only' },
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Seoul' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { location: 'Busan' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: '21C' }] },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
  });

  it('merges consecutive turns of the same role', () => {
    const body = toNative({ messages: [user('a'), user('b'), { role: 'assistant', content: 'c' }, { role: 'assistant', content: 'd' }] });
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'c' },
          { type: 'text', text: 'd' },
        ],
      },
    ]);
  });

  it('refuses tool arguments that are not JSON, and tool messages without an id', () => {
    const bad = { id: 't', type: 'function', function: { name: 'f', arguments: '{not json' } };
    rejects(() => toNative({ messages: [user('x'), { role: 'assistant', tool_calls: [bad] }] }), 'messages', /arguments/);
    rejects(() => toNative({ messages: [user('x'), { role: 'tool', content: 'r' }] }), 'messages', /tool_call_id/);
  });

  it('treats empty tool arguments as an empty input object', () => {
    const body = toNative({
      messages: [user('x'), { role: 'assistant', tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '' } }] }],
    });
    expect((body.messages as JsonObject[])[1]!.content).toEqual([{ type: 'tool_use', id: 't', name: 'f', input: {} }]);
  });
});

describe('tools-to-native and tool-choice-to-native', () => {
  const tools = [
    {
      type: 'function',
      function: { name: 'lookup', description: 'Find a thing', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
      cache_control: { type: 'ephemeral' },
    },
  ];

  it('translates function tools to input_schema, carrying cache_control', () => {
    const body = toNative({ messages: [user('x')], tools });
    expect(body.tools).toEqual([
      {
        name: 'lookup',
        description: 'Find a thing',
        input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        cache_control: { type: 'ephemeral' },
      },
    ]);
  });

  it.each([
    ['none', { type: 'none' }],
    ['auto', { type: 'auto' }],
    ['required', { type: 'any' }],
    [
      { type: 'function', function: { name: 'lookup' } },
      { type: 'tool', name: 'lookup' },
    ],
  ])('maps tool_choice %j', (choice, expected) => {
    expect(toNative({ messages: [user('x')], tools, tool_choice: choice as JsonObject }).tool_choice).toEqual(expected);
  });

  it('carries parallel_tool_calls: false as disable_parallel_tool_use, never dropping it', () => {
    expect(toNative({ messages: [user('x')], tools, parallel_tool_calls: false }).tool_choice).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(toNative({ messages: [user('x')], tools, tool_choice: 'required', parallel_tool_calls: false }).tool_choice).toEqual({
      type: 'any',
      disable_parallel_tool_use: true,
    });
    const body = toNative({ messages: [user('x')], tools, parallel_tool_calls: true });
    expect(body.tool_choice).toBeUndefined();
    expect(body.parallel_tool_calls).toBeUndefined();
  });

  it('refuses non-function tools with a pointer to the messages door', () => {
    rejects(() => toNative({ messages: [user('x')], tools: [{ type: 'custom', custom: { name: 'x' } }] }), 'tools', /\/v1\/messages/);
  });
});

describe('stop-to-sequences and default-max-tokens', () => {
  it('wraps a string stop in an array', () => {
    const body = toNative({ messages: [user('x')], stop: 'END' });
    expect(body.stop_sequences).toEqual(['END']);
    expect(body.stop).toBeUndefined();
    expect(toNative({ messages: [user('x')], stop: ['a', 'b'] }).stop_sequences).toEqual(['a', 'b']);
  });

  it('fills in 8192 when max tokens are omitted', () => {
    expect(toNative({ messages: [user('x')] }).max_tokens).toBe(8192);
  });

  it('carries max_completion_tokens (preferred) or max_tokens', () => {
    const a = toNative({ messages: [user('x')], max_completion_tokens: 300, max_tokens: 100 });
    expect(a.max_tokens).toBe(300);
    expect(a.max_completion_tokens).toBeUndefined();
    expect(toNative({ messages: [user('x')], max_tokens: 100 }).max_tokens).toBe(100);
    rejects(() => toNative({ messages: [user('x')], max_tokens: -5 }), 'max_tokens');
  });
});

describe('effort-to-native', () => {
  it('moves reasoning_effort to output_config.effort and lowers none to low', () => {
    const a = toNative({ messages: [user('x')], reasoning_effort: 'high' });
    expect(a.output_config).toEqual({ effort: 'high' });
    expect(a.reasoning_effort).toBeUndefined();
    expect(toNative({ messages: [user('x')], reasoning_effort: 'none' }).output_config).toEqual({ effort: 'low' });
  });

  it('omits the effort entirely for models whose effort_levels is null', () => {
    const body = toNative({ messages: [user('x')], reasoning_effort: 'high' }, { model: { effort_levels: null } });
    expect(body.output_config).toBeUndefined();
    expect(body.reasoning_effort).toBeUndefined();
  });

  it('refuses a value the model does not accept, naming the accepted values', () => {
    const e = rejects(() => toNative({ messages: [user('x')], reasoning_effort: 'xhigh' }), 'reasoning_effort');
    expect(e.message).toContain('low, medium, high, max');
  });

  it('drops the field before the date it started being carried', () => {
    const body = toNative({ messages: [user('x')], reasoning_effort: 'high' }, { now: '2026-08-31T14:59:59Z' });
    expect(body.output_config).toBeUndefined();
    expect(toNative({ messages: [user('x')], reasoning_effort: 'high' }, { now: '2026-08-31T15:00:00Z' }).output_config).toEqual({
      effort: 'high',
    });
  });
});

describe('model-rules', () => {
  it('drops the parameters the rules name (vendor A chain)', () => {
    const body = toNative({ messages: [user('x')], temperature: 0.5, top_p: 0.9 }, { rules: { drops: ['temperature', 'top_p'] } });
    expect(body.temperature).toBeUndefined();
    expect(body.top_p).toBeUndefined();
    expect(toNative({ messages: [user('x')], temperature: 0.5 }).temperature).toBe(0.5);
  });

  it('lowers forced tool choices to auto on native bodies, keeping disable_parallel_tool_use', () => {
    const tools = [{ type: 'function', function: { name: 'f' } }];
    const opts = { rules: { lowersForcedToolChoice: true } };
    expect(toNative({ messages: [user('x')], tools, tool_choice: 'required' }, opts).tool_choice).toEqual({ type: 'auto' });
    expect(
      toNative(
        { messages: [user('x')], tools, tool_choice: { type: 'function', function: { name: 'f' } }, parallel_tool_calls: false },
        opts,
      ).tool_choice,
    ).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(toNative({ messages: [user('x')], tools, tool_choice: 'none' }, opts).tool_choice).toEqual({ type: 'none' });
  });

  it('works on chat-completions bodies for vendors B–E', () => {
    const lower = (tool_choice: unknown) =>
      run(
        ['model-rules'],
        makeCall({ model: 'b-5', messages: [], temperature: 0.2, tool_choice } as JsonObject, {
          rules: { drops: ['temperature'], lowersForcedToolChoice: true },
        }),
      ).body;
    expect(lower('required').tool_choice).toBe('auto');
    expect(lower({ type: 'function', function: { name: 'f' } }).tool_choice).toBe('auto');
    expect(lower('none').tool_choice).toBe('none');
    expect(lower('required').temperature).toBeUndefined();
  });

  it('notes what it changed, and only that', () => {
    const notes = (body: JsonObject) =>
      run(
        ['model-rules'],
        makeCall({ model: 'b-5', messages: [], ...body } as JsonObject, {
          rules: { drops: ['temperature', 'top_p'], lowersForcedToolChoice: true },
        }),
      ).notes.adjusted;
    expect(notes({ temperature: 0.2, tool_choice: 'required' })).toEqual(['temperature dropped', 'tool_choice=auto']);
    expect(notes({ top_p: 0.5, tool_choice: 'auto' })).toEqual(['top_p dropped']);
    expect(notes({ tool_choice: 'none' })).toBeUndefined();
  });
});

describe('carry-cache-control', () => {
  it('carries cache_control on system, user and assistant text parts, tool results, tools and the top level', () => {
    const cc = { type: 'ephemeral' };
    const body = toNative({
      cache_control: cc,
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'sys', cache_control: cc }] },
        user([{ type: 'text', text: 'u', cache_control: cc }]),
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'a', cache_control: cc }],
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 't1', content: [{ type: 'text', text: 'r', cache_control: cc }] },
        { role: 'tool', tool_call_id: 't1', content: 'r2', cache_control: cc },
      ],
      tools: [{ type: 'function', function: { name: 'f' }, cache_control: cc }],
    });
    const messages = body.messages as JsonObject[];
    expect(body.cache_control).toEqual(cc);
    expect((body.system as JsonObject[])[0]!.cache_control).toEqual(cc);
    expect((messages[0]!.content as JsonObject[])[0]!.cache_control).toEqual(cc);
    expect((messages[1]!.content as JsonObject[])[0]!.cache_control).toEqual(cc);
    const results = messages[2]!.content as JsonObject[];
    expect((results[0]!.content as JsonObject[])[0]!.cache_control).toEqual(cc);
    expect(results[1]).toEqual({ type: 'tool_result', tool_use_id: 't1', content: 'r2', cache_control: cc });
    expect((body.tools as JsonObject[])[0]!.cache_control).toEqual(cc);
  });

  it('does not carry cache_control set directly on a user or assistant message object', () => {
    const body = toNative({ messages: [{ role: 'user', content: 'u', cache_control: { type: 'ephemeral' } }] });
    expect(JSON.stringify(body)).not.toContain('cache_control');
  });

  it('keeps ttl only in the native shape and refuses ttl values the vendor rejects', () => {
    const withTtl = toNative({
      messages: [user([{ type: 'text', text: 'u', cache_control: { type: 'ephemeral', ttl: '1h', scope: 'x' } }])],
    });
    expect(((withTtl.messages as JsonObject[])[0]!.content as JsonObject[])[0]!.cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
    rejects(
      () => toNative({ messages: [user([{ type: 'text', text: 'u', cache_control: { type: 'ephemeral', ttl: '24h' } }])] }),
      'cache_control',
      /5m|1h/,
    );
    rejects(() => toNative({ messages: [user('x')], cache_control: { type: 'persistent' } }), 'cache_control');
  });
});

describe('chat-params-to-native', () => {
  it.each([
    ['n', 2],
    ['logprobs', true],
    ['top_logprobs', 3],
    ['frequency_penalty', 0.5],
    ['presence_penalty', -1],
    ['seed', 42],
    ['logit_bias', { '50256': -100 }],
    ['store', true],
    ['audio', { voice: 'alloy', format: 'mp3' }],
    ['web_search_options', {}],
    ['prompt_cache_retention', '24h'],
  ])('refuses %s=%j, naming it and pointing to /v1/messages', (param, value) => {
    const e = rejects(() => toNative({ messages: [user('x')], [param]: value } as JsonObject), param);
    expect(e.message).toContain(param);
    expect(e.message).toContain('/v1/messages');
  });

  it('removes neutral values of chat-only parameters', () => {
    const body = toNative({
      messages: [user('x')],
      n: 1,
      logprobs: false,
      frequency_penalty: 0,
      presence_penalty: 0,
      seed: null,
      logit_bias: {},
      stream: true,
      stream_options: { include_usage: true },
      store: false,
      response_format: { type: 'text' },
    });
    expect(Object.keys(body).sort()).toEqual(['max_tokens', 'messages', 'model', 'stream']);
  });

  it('carries service_tier, which the door has put in native words (config/doors.yaml rewrite)', () => {
    expect(toNative({ messages: [user('x')], service_tier: 'standard_only' }).service_tier).toBe('standard_only');
  });

  it('maps user to metadata.user_id', () => {
    expect(toNative({ messages: [user('x')], user: 'u-42' }).metadata).toEqual({ user_id: 'u-42' });
  });

  it('maps response_format json_schema to native structured outputs and refuses json_object', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
    const body = toNative({
      messages: [user('x')],
      reasoning_effort: 'low',
      response_format: { type: 'json_schema', json_schema: { name: 'r', schema, strict: true } },
    });
    expect(body.output_config).toEqual({ effort: 'low', format: { type: 'json_schema', schema } });
    rejects(() => toNative({ messages: [user('x')], response_format: { type: 'json_object' } }), 'response_format', /json_schema/);
  });

  it('refuses temperature above the native range instead of clamping it', () => {
    rejects(() => toNative({ messages: [user('x')], temperature: 1.5 }), 'temperature');
    expect(toNative({ messages: [user('x')], temperature: 1 }).temperature).toBe(1);
  });

  it('refuses a parameter it does not know', () => {
    rejects(() => toNative({ messages: [user('x')], frobnicate: true }), 'frobnicate', /\/v1\/messages/);
  });

  it('passes native thinking through', () => {
    expect(toNative({ messages: [user('x')], thinking: { type: 'enabled', budget_tokens: 2000 } }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 2000,
    });
  });
});

describe('ask-stream-usage', () => {
  it('asks for stream usage when the client did not, and notes it', () => {
    const call = run(['ask-stream-usage'], makeCall({ model: 'b-5', messages: [], stream: true }));
    expect(call.body.stream_options).toEqual({ include_usage: true });
    expect(call.notes.streamUsageInjected).toBe(true);
  });

  it('leaves a client that asked, and a non-stream call, alone', () => {
    const asked = run(
      ['ask-stream-usage'],
      makeCall({ model: 'b-5', messages: [], stream: true, stream_options: { include_usage: true } }),
    );
    expect(asked.notes.streamUsageInjected).toBeUndefined();
    const plain = run(['ask-stream-usage'], makeCall({ model: 'b-5', messages: [] }));
    expect(plain.body.stream_options).toBeUndefined();
  });
});

describe('request chain', () => {
  it('never changes the client body', () => {
    const call = makeCall({ model: 'a', messages: [{ role: 'system', content: 's' }, user('x')], stop: 'E' });
    const before = structuredClone(call.client);
    run(['system-to-field', 'messages-to-blocks', 'stop-to-sequences'], call);
    expect(call.client).toEqual(before);
  });
});

describe('count-characters (speech)', () => {
  it('counts Unicode code points of input once, for the reservation and the charge', () => {
    const call = countCharacters.run(makeCall({ model: 'tts-1', input: '안녕 👋 hi' }));
    expect(call.notes.fixedUsage?.characters).toBe(7);
  });

  it('refuses an input that is not a string', () => {
    expect(() => countCharacters.run(makeCall({ model: 'tts-1', input: ['a'] }))).toThrow(/input must be a string/);
  });
});
