// The bundled vendor simulator, exercised over real HTTP with the vendors' own SDKs.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { countTokens } from '../../simulator/tokens.ts';

let sim: Simulator;
const refused: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({
    videoStepMs: 30,
    refuse: ({ path, model, body }) => {
      if (model === 'refusing-model' && body.temperature !== undefined) {
        refused.push(path);
        return { status: 400, message: 'temperature is not supported by this model' };
      }
      return null;
    },
  });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.reset();
});

const anthropic = (route = 'a1') => new Anthropic({ apiKey: 'sk-a', baseURL: sim.routeUrl(route), maxRetries: 0 });
const openai = (route = 'b1') => new OpenAI({ apiKey: 'sk-b', baseURL: `${sim.routeUrl(route)}/v1`, maxRetries: 0 });
/** The simulator's rule (simulator/tokens.ts): a real tokenizer's count of the pieces, one line each. */
const tok = (...pieces: string[]) => countTokens(pieces.join('\n'));
const post = (route: string, path: string, body: unknown, headers: Record<string, string> = { authorization: 'Bearer k' }) =>
  fetch(`${sim.routeUrl(route)}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('vendor A messages', () => {
  it('answers plain messages with documented usage (input excludes cache)', async () => {
    const msg = await anthropic().messages.create({
      model: 'a-model',
      max_tokens: 100,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    const text = 'Simulated reply from a-model: Hello there';
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.content).toEqual([{ type: 'text', text }]);
    expect(msg.stop_reason).toBe('end_turn');
    expect(msg.usage.input_tokens).toBe(tok('Be brief.', 'Hello there'));
    expect(msg.usage.output_tokens).toBe(tok(text));
    expect(msg.usage.cache_read_input_tokens).toBe(0);
    expect(msg.usage.cache_creation_input_tokens).toBe(0);
    const rec = sim.receivedOn('a1')[0]!;
    expect(rec).toMatchObject({ route: 'a1', method: 'POST', path: '/v1/messages' });
    expect(rec.headers['x-api-key'] ?? rec.headers.authorization).toMatch(/sk-a/);
    expect(rec.headers['anthropic-version']).toBeTruthy();
    expect((rec.body as { model: string }).model).toBe('a-model');
  });

  it('counts images and tool definitions', async () => {
    const tools = [{ name: 'lookup', description: 'd', input_schema: { type: 'object' as const, properties: {} } }];
    const msg = await anthropic().messages.create({
      model: 'a-model',
      max_tokens: 100,
      tools,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            { type: 'text', text: 'What is this?' },
          ],
        },
      ],
    });
    expect(msg.usage.input_tokens).toBe(tok('What is this?', JSON.stringify(tools)) + 85);
    expect(msg.content[0]!.type).toBe('text'); // no tag: no tool call
  });

  it('streams events in the vendor order and the SDK assembles them', async () => {
    const stream = anthropic().messages.stream({
      model: 'a-model',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Stream please [[sim:usage input=300000 output=50 cache_read=100 cache_write=20]]' }],
    });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const msg = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types[1]).toBe('content_block_start'); // the SDK hides `ping`; the raw check is below
    expect(types.filter((t) => t === 'content_block_delta').length).toBeGreaterThan(3);
    expect(types.slice(-4)).toEqual(['content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(msg.content[0]).toEqual({ type: 'text', text: 'Simulated reply from a-model: Stream please', citations: undefined });
    expect(msg.usage).toMatchObject({
      input_tokens: 300000,
      output_tokens: 50,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 20,
    });

    const raw = await post(
      'a1',
      '/v1/messages',
      { model: 'a-model', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'one two' }] },
      { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    );
    const names = [...(await raw.text()).matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    expect(names.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'ping']);
    expect(names.at(-1)).toBe('message_stop');
  });

  it('calls tools on [[sim:tool]] or a forced choice, and answers tool results with text', async () => {
    const tools = [
      { name: 'weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } },
      { name: 'time', input_schema: { type: 'object' as const, properties: {} } },
    ];
    const forced = await anthropic().messages.create({
      model: 'a-model',
      max_tokens: 100,
      tools,
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather?' }],
    });
    expect(forced.stop_reason).toBe('tool_use');
    const call = forced.content.find((b) => b.type === 'tool_use')!;
    expect(call).toMatchObject({ type: 'tool_use', name: 'weather', input: { city: 'sim' } });
    expect((call as { id: string }).id).toMatch(/^toolu_/);
    expect(forced.usage.output_tokens).toBe(tok(JSON.stringify({ city: 'sim' })));

    const two = await anthropic()
      .messages.stream({ model: 'a-model', max_tokens: 100, tools, messages: [{ role: 'user', content: 'Both [[sim:tools=2]]' }] })
      .finalMessage();
    expect(two.content.map((b) => (b.type === 'tool_use' ? b.name : b.type))).toEqual(['weather', 'time']);
    expect(two.content[1]).toMatchObject({ input: { q: 'sim' } });

    const after = await anthropic().messages.create({
      model: 'a-model',
      max_tokens: 100,
      tools,
      messages: [
        { role: 'user', content: 'Weather? [[sim:tool]]' },
        { role: 'assistant', content: forced.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: (call as { id: string }).id, content: 'Sunny, 21C' }] },
      ],
    });
    expect(after.stop_reason).toBe('end_turn');
    expect(after.content[0]).toMatchObject({ type: 'text', text: 'Simulated reply from a-model: tool result: Sunny, 21C' });
  });

  it('thinking, web search, stop reasons and max_tokens truncation', async () => {
    const t = await anthropic()
      .messages.stream({
        model: 'a-model',
        max_tokens: 500,
        messages: [{ role: 'user', content: 'Think [[sim:thinking]] [[sim:web_search=2]]' }],
      })
      .finalMessage();
    expect(t.content[0]).toMatchObject({ type: 'thinking' });
    expect((t.content[0] as { signature: string }).signature.length).toBeGreaterThan(10);
    expect(t.content.filter((b) => b.type === 'server_tool_use')).toHaveLength(2);
    expect(t.content.at(-1)!.type).toBe('text');
    expect(t.usage.server_tool_use?.web_search_requests).toBe(2);

    for (const [tag, reason] of [
      ['refusal', 'refusal'],
      ['stop_sequence', 'stop_sequence'],
      ['pause_turn', 'pause_turn'],
      ['max_tokens', 'max_tokens'],
    ]) {
      const m = await anthropic().messages.create({
        model: 'a-model',
        max_tokens: 100,
        messages: [{ role: 'user', content: `x [[sim:stop=${tag}]]` }],
      });
      expect(m.stop_reason).toBe(reason);
    }

    const cut = await anthropic().messages.create({
      model: 'a-model',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'Long one [[sim:long=50]]' }],
    });
    expect(cut.stop_reason).toBe('max_tokens');
    expect(cut.usage.output_tokens).toBe(5);
    expect((cut.content[0] as { text: string }).text).toHaveLength(20);
  });

  it('rejects missing auth, missing version and malformed bodies in vendor A shape', async () => {
    const noKey = await post('a1', '/v1/messages', { model: 'm', max_tokens: 5, messages: [] }, { 'anthropic-version': '2023-06-01' });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toEqual({ type: 'error', error: { type: 'authentication_error', message: expect.any(String) } });
    const noVersion = await post('a1', '/v1/messages', { model: 'm', max_tokens: 5, messages: [] }, { 'x-api-key': 'k' });
    expect(noVersion.status).toBe(400);
    expect((await noVersion.json()).error.type).toBe('invalid_request_error');
    const err = await anthropic()
      // @ts-expect-error max_tokens is required
      .messages.create({ model: 'a-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'max_tokens: Field required' },
    });
    expect(sim.receivedOn('a1')).toHaveLength(3); // recorded even when rejected
  });

  it('web searches stop at max_uses when every web search tool has one, as vendor A does', async () => {
    const ask = (tools: unknown[]) =>
      anthropic().messages.create({
        model: 'a-model',
        max_tokens: 50,
        tools: tools as never,
        messages: [{ role: 'user', content: 'x [[sim:web_search=5]]' }],
      });
    const web = { type: 'web_search_20250305', name: 'web_search' };
    expect((await ask([{ ...web, max_uses: 3 }])).usage.server_tool_use?.web_search_requests).toBe(3);
    expect(
      (
        await ask([
          { ...web, max_uses: 1 },
          { ...web, name: 'web_search_2', max_uses: 1 },
        ])
      ).usage.server_tool_use?.web_search_requests,
    ).toBe(2);
    expect((await ask([{ ...web, max_uses: 1 }, web])).usage.server_tool_use?.web_search_requests).toBe(5);
  });
});

describe('vendor B chat completions', () => {
  it('answers with prompt_tokens including cached tokens', async () => {
    const r = await openai().chat.completions.create({
      model: 'b-model',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'Hi [[sim:usage input=1000 output=7 cache_read=300 cache_write=20 reasoning=2]]' },
      ],
    });
    expect(r.id).toMatch(/^chatcmpl-/);
    expect(r.object).toBe('chat.completion');
    expect(r.choices[0]!.message.content).toBe('Simulated reply from b-model: Hi');
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage).toMatchObject({
      prompt_tokens: 1300,
      completion_tokens: 7,
      total_tokens: 1307,
      prompt_tokens_details: { cached_tokens: 300 },
      completion_tokens_details: { reasoning_tokens: 2 },
    });
    const plain = await openai().chat.completions.create({ model: 'b-model', messages: [{ role: 'user', content: 'abcdefgh' }] });
    expect(plain.usage!.prompt_tokens).toBe(tok('abcdefgh'));
    expect(plain.usage!.completion_tokens).toBe(tok('Simulated reply from b-model: abcdefgh'));
    expect(sim.receivedOn('b1')[0]!.headers.authorization).toBe('Bearer sk-b');
  });

  it('streams chunks, with a usage chunk only when include_usage is set', async () => {
    const withUsage = await openai().chat.completions.create({
      model: 'b-model',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Count these words' }],
    });
    const chunks = [];
    for await (const c of withUsage) chunks.push(c);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Simulated reply from b-model: Count these words');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBe(tok('Simulated reply from b-model: Count these words'));
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');

    const res = await post('b1', '/v1/chat/completions', { model: 'b-model', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const text = await res.text();
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(text).not.toContain('"usage"');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('streams two parallel tool calls and honours max_completion_tokens', async () => {
    const tools = [
      { type: 'function' as const, function: { name: 'a', parameters: { type: 'object', properties: {} } } },
      {
        type: 'function' as const,
        function: { name: 'b', parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } },
      },
    ];
    const none = await openai().chat.completions.create({ model: 'b-model', tools, messages: [{ role: 'user', content: 'no tag' }] });
    expect(none.choices[0]!.message.tool_calls).toBeUndefined();
    const stream = openai().chat.completions.stream({
      model: 'b-model',
      tools,
      messages: [{ role: 'user', content: 'go [[sim:tools=2]]' }],
    });
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!;
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(calls.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : []))).toEqual([
      ['a', '{"q":"sim"}'],
      ['b', '{"n":1}'],
    ]);
    expect(calls[0]!.id).toMatch(/^call_/);
    const forced = await openai().chat.completions.create({
      model: 'b-model',
      tools,
      tool_choice: { type: 'function', function: { name: 'b' } },
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(forced.choices[0]!.message.tool_calls![0]).toMatchObject({ function: { name: 'b' } });
    const after = await openai().chat.completions.create({
      model: 'b-model',
      tools,
      messages: [
        { role: 'user', content: 'x [[sim:tool]]' },
        { role: 'assistant', content: null, tool_calls: forced.choices[0]!.message.tool_calls! },
        { role: 'tool', tool_call_id: calls[0]!.id, content: '42 apples' },
      ],
    });
    expect(after.choices[0]!.message.content).toBe('Simulated reply from b-model: tool result: 42 apples');

    const short = await openai().chat.completions.create({
      model: 'b-model',
      max_completion_tokens: 3,
      messages: [{ role: 'user', content: 'Tell me a long story' }],
    });
    expect(short.choices[0]!.finish_reason).toBe('length');
    expect(short.usage!.completion_tokens).toBe(3);
  });
});

describe('vendor B responses', () => {
  it('answers plain and streamed with documented usage', async () => {
    const r = await openai().responses.create({
      model: 'b-resp',
      instructions: 'Be kind',
      input: 'Hello [[sim:usage cache_read=40 reasoning=5]]',
    });
    expect(r.id).toMatch(/^resp_/);
    expect(r.output_text).toBe('Simulated reply from b-resp: Hello');
    const input = tok('Be kind', 'Hello [[sim:usage cache_read=40 reasoning=5]]');
    expect(r.usage).toMatchObject({
      input_tokens: input + 40,
      input_tokens_details: { cached_tokens: 40 },
      output_tokens: tok('Simulated reply from b-resp: Hello') + 5,
      output_tokens_details: { reasoning_tokens: 5 },
    });

    const stream = await openai().responses.create({ model: 'b-resp', input: 'Stream it [[sim:web_search=2]]', stream: true });
    const types: string[] = [];
    let completed: { output: { type: string }[]; usage: unknown } | undefined;
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.completed') completed = e.response as never;
    }
    expect(types.slice(0, 2)).toEqual(['response.created', 'response.in_progress']);
    expect(types).toContain('response.output_text.delta');
    const order = [
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ];
    const at = order.map((t) => types.lastIndexOf(t));
    expect(at).toEqual([...at].sort((a, b) => a - b));
    expect(types.at(-1)).toBe('response.completed');
    expect(completed!.output.map((o) => o.type)).toEqual(['web_search_call', 'web_search_call', 'message']);
  });

  it('calls functions and truncates at max_output_tokens', async () => {
    const r = await openai().responses.create({
      model: 'b-resp',
      input: 'x [[sim:tool]]',
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} }, strict: false }],
    });
    expect(r.output[0]).toMatchObject({ type: 'function_call', name: 'f', arguments: '{"q":"sim"}' });
    const inc = await openai().responses.create({ model: 'b-resp', input: 'x [[sim:long=100]]', max_output_tokens: 16 });
    expect(inc.status).toBe('incomplete');
    expect(inc.incomplete_details?.reason).toBe('max_output_tokens');
    expect(inc.usage!.output_tokens).toBe(16);
  });

  /** `max_tool_calls` is a responses field the 6.x SDK's types do not list yet; the SDK sends it as given. */
  const maxToolCalls = (n: number) => ({ max_tool_calls: n }) as object;

  it('web searches stop at max_tool_calls, as the responses format does', async () => {
    const r = await openai().responses.create({
      model: 'b-resp',
      input: 'x [[sim:web_search=5]]',
      tools: [{ type: 'web_search' }],
      ...maxToolCalls(2),
    });
    expect(r.output.filter((o) => o.type === 'web_search_call')).toHaveLength(2);
  });
});

describe('media paths', () => {
  it('images, image edits, speech, embeddings and moderations', async () => {
    const img = await openai().images.generate({ model: 'image-b-1', prompt: 'a cat', n: 1 });
    expect(Buffer.from(img.data![0]!.b64_json!, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(img.usage).toMatchObject({ input_tokens: 2, output_tokens: 1056 });

    const edit = await openai().images.edit({
      model: 'image-b-1',
      prompt: 'make it blue',
      image: await toFile(Buffer.from('fakepng'), 'in.png', { type: 'image/png' }),
    });
    expect(edit.data![0]!.b64_json).toBeTruthy();
    const rec = sim.receivedOn('b1').at(-1)!;
    expect(rec.body).toEqual({
      fields: { model: 'image-b-1', prompt: 'make it blue' },
      files: [{ name: 'image', filename: 'in.png', size: 7 }],
    });

    const speech = await openai().audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello', response_format: 'wav' });
    expect(speech.headers.get('content-type')).toBe('audio/wav');
    const bytes = Buffer.from(await speech.arrayBuffer());
    expect(bytes.subarray(0, 4).toString()).toBe('RIFF');
    const mp3 = await post('b1', '/v1/audio/speech', { model: 'tts-1', voice: 'alloy', input: 'Hi' });
    expect(mp3.headers.get('content-type')).toBe('audio/mpeg');
    expect((await mp3.arrayBuffer()).byteLength).toBeGreaterThan(100);

    const emb = await openai().embeddings.create({ model: 'emb', input: ['one', 'two three'] });
    expect(emb.data).toHaveLength(2);
    expect(emb.data[0]!.embedding).toHaveLength(8);
    expect(emb.usage.prompt_tokens).toBe(tok('one') + tok('two three'));
    const again = await openai().embeddings.create({ model: 'emb', input: 'one', encoding_format: 'float', dimensions: 8 });
    expect(again.data[0]!.embedding.map((x) => Math.fround(x))).toEqual(Array.from(emb.data[0]!.embedding));

    const mod = await openai().moderations.create({ model: 'omni-moderation-latest', input: ['fine', 'bad [[sim:flag]]'] });
    expect(mod.results.map((r) => r.flagged)).toEqual([false, true]);
  });
});

describe('vendor D video jobs', () => {
  const create = async (prompt: string, duration = 5) => {
    const res = await post('d1', '/v1/videos/generations', {
      model: 'video-d-1',
      prompt,
      duration,
      resolution: '720p',
      aspect_ratio: '16:9',
      generate_audio: false,
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { request_id: string }).request_id;
  };
  const poll = async (id: string) => {
    const res = await fetch(`${sim.routeUrl('d1')}/v1/videos/${id}`, { headers: { authorization: 'Bearer k' } });
    return (await res.json()) as Record<string, any>;
  };
  const until = async (id: string, status: string) => {
    for (let i = 0; i < 100; i++) {
      const s = await poll(id);
      if (s.status === status) return s;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`never reached ${status}`);
  };

  it('goes pending → in_progress → done, and the video URL serves mp4 bytes', async () => {
    const id = await create('a dog surfing');
    expect((await poll(id)).status).toBe('pending');
    const mid = await until(id, 'in_progress');
    expect(mid.progress).toBeGreaterThan(0);
    const done = await until(id, 'done');
    expect(done.video.duration).toBe(5);
    expect(done.usage.cost_usd).toBeCloseTo(0.05);
    const file = await fetch(done.video.url);
    expect(file.headers.get('content-type')).toBe('video/mp4');
    expect(
      Buffer.from(await file.arrayBuffer())
        .subarray(4, 8)
        .toString(),
    ).toBe('ftyp');
    expect(sim.receivedOn('d1').some((r) => r.path.startsWith('/files/videos/'))).toBe(true);
  });

  it('honours cost, moderation, failure, never and undeliverable tags', async () => {
    const costly = await create('x [[sim:cost=0.28]]', 4);
    const im = await create('x [[sim:input_moderated cost=0.05]]');
    const om = await create('x [[sim:output_moderated]]');
    const fail = await create('x [[sim:fail]]');
    const never = await create('x [[sim:never]]');
    const undeliverable = await create('x [[sim:undeliverable]]');
    expect((await until(costly, 'done')).usage.cost_usd).toBe(0.28);
    expect(await until(im, 'failed')).toMatchObject({ error: { code: 'input_moderated' }, usage: { cost_usd: 0.05 } });
    expect(await until(om, 'failed')).toMatchObject({ error: { code: 'output_moderated' } });
    expect(await until(fail, 'failed')).toMatchObject({ error: { code: 'internal_error' } });
    const u = await until(undeliverable, 'done');
    expect((await fetch(u.video.url)).status).toBe(500);
    expect((await poll(never)).status).toBe('in_progress');
    const missing = await fetch(`${sim.routeUrl('d1')}/v1/videos/nope`, { headers: { authorization: 'Bearer k' } });
    expect(missing.status).toBe(404);
  });
});

describe('faults, auth and refusals', () => {
  it('a 429 with retry-after, then success', async () => {
    sim.inject('b1', { kind: 'status', status: 429, retryAfterSeconds: 2 });
    const body = { model: 'b-model', messages: [{ role: 'user', content: 'x' }] };
    const first = await post('b1', '/v1/chat/completions', body);
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('2');
    expect(await first.json()).toMatchObject({ error: { type: 'requests', code: 'rate_limit_exceeded', param: null } });
    expect((await post('b1', '/v1/chat/completions', body)).status).toBe(200);
    expect(sim.receivedOn('b1')).toHaveLength(2);
  });

  it('529 in vendor A shape, applied `times` times, only on its route', async () => {
    sim.inject('a1', { kind: 'status', status: 529, times: 2 });
    const req = { model: 'a-model', max_tokens: 10, messages: [{ role: 'user' as const, content: 'x' }] };
    for (let i = 0; i < 2; i++) {
      const e = await anthropic()
        .messages.create(req)
        .catch((err: unknown) => err);
      expect((e as { status: number }).status).toBe(529);
      expect((e as { error: unknown }).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    }
    await expect(anthropic('a2').messages.create(req)).resolves.toBeTruthy();
    await expect(anthropic().messages.create(req)).resolves.toBeTruthy();
  });

  it('reset destroys the socket; delay waits', async () => {
    sim.inject('b1', { kind: 'reset' });
    sim.inject('b1', { kind: 'delay', ms: 150 });
    const body = { model: 'b-model', messages: [{ role: 'user', content: 'x' }] };
    await expect(post('b1', '/v1/chat/completions', body)).rejects.toThrow();
    const t0 = Date.now();
    expect((await post('b1', '/v1/chat/completions', body)).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect(sim.receivedOn('b1')).toHaveLength(2);
  });

  it('stream-error: vendor A sends an error event; chat aborts', async () => {
    sim.inject('a1', { kind: 'stream-error', afterEvents: 3 });
    const plain = await anthropic().messages.create({ model: 'a-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
    expect(plain.type).toBe('message'); // non-streaming requests skip stream faults
    const res = await post(
      'a1',
      '/v1/messages',
      { model: 'a-model', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'x' }] },
      { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    );
    const text = await res.text();
    expect(text.match(/^event: /gm)).toHaveLength(4);
    expect(text).toContain('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}');

    sim.inject('b1', { kind: 'stream-error', afterEvents: 2 });
    const stream = await openai().chat.completions.create({ model: 'b-model', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const got: unknown[] = [];
    await expect(
      (async () => {
        for await (const c of stream) got.push(c);
      })(),
    ).rejects.toThrow();
    expect(got).toHaveLength(2);
  });

  it('vendor B auth and refuse()', async () => {
    const res = await post('b1', '/v1/embeddings', { model: 'e', input: 'x' }, {});
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error', param: null } });
    const e = await openai()
      .chat.completions.create({ model: 'refusing-model', temperature: 0.5, messages: [{ role: 'user', content: 'x' }] })
      .catch((err: unknown) => err);
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect((e as { message: string }).message).toContain('temperature is not supported');
    expect(refused).toEqual(['/v1/chat/completions']);
  });

  it('the bare URL serves the default route', async () => {
    const r = await new OpenAI({ apiKey: 'k', baseURL: `${sim.url}/v1`, maxRetries: 0 }).chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(r.choices[0]!.message.content).toBe('Simulated reply from m: x');
    expect(sim.receivedOn('default')).toHaveLength(1);
  });
});
