import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { prepareCall } from '../../engine/calls/prepare.ts';
import { measureBody } from '../../engine/catalog/body-measure.ts';
import { pricesAt, pricesForPrompt, textReservation, tokenCost } from '../../engine/catalog/pricing.ts';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { textBounds } from '../../engine/catalog/text-bounds.ts';
import { costOfUsage } from '../../engine/catalog/usage-cost.ts';
import type { HonouredLimits } from '../../engine/core/protocol.ts';
import { emptyUsage, type JsonObject, type JsonValue, type Usage } from '../../engine/core/types.ts';
import type { Caller } from '../../engine/money/accounts.ts';
import { chatTurn } from '../../simulator/chat.ts';
import { responsesTurn } from '../../simulator/responses.ts';
import { messagesTurn } from '../../simulator/vendor-a.ts';
import { protocols } from '../../transforms/protocols/index.ts';

const snap = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);
const model = (id: string) => snap.catalog.models.get(id)!;
const NOW = new Date('2026-11-21T03:00:00Z');
const ctx = (at = NOW) => ({ billing: snap.config.billing, modelById: (id: string) => snap.catalog.models.get(id), at });
const usage = (u: Partial<Usage>): Usage => ({ ...emptyUsage(), ...u });

describe('prices', () => {
  it('a price per 1M tokens is price × 1000 nano per token, rounded up', () => {
    expect(tokenCost(1, 1.75)).toBe(1750n);
    expect(tokenCost(1_000_000, 30)).toBe(30_000_000_000n);
    expect(tokenCost(1, 0.02)).toBe(20n);
    expect(tokenCost(3, 0.0001)).toBe(1n); // 0.3 nano rounds up
    expect(tokenCost(0, 5)).toBe(0n);
  });

  it('the 272K tier applies once the whole prompt is above the threshold', () => {
    const pro = model('b-pro-5.4');
    expect(pricesForPrompt(pro, NOW, 272_000)).toMatchObject({ input: 30, output: 180 });
    expect(pricesForPrompt(pro, NOW, 272_001)).toMatchObject({ input: 60, output: 270 });
    // 300K input + 10 output at the tier price: 300000 × 60 + 10 × 270 (× 1000 nano).
    expect(costOfUsage(pro, usage({ input_tokens: 300_000, output_tokens: 10 }), ctx())).toBe(18_002_700_000n);
    // Cached tokens count toward the threshold.
    expect(costOfUsage(pro, usage({ input_tokens: 100_000, cache_read_tokens: 200_000 }), ctx())).toBeGreaterThan(
      costOfUsage(pro, usage({ input_tokens: 100_000 }), ctx()) * 2n,
    );
  });

  it('a scheduled price takes effect at 00:00 Korean time on its date', () => {
    const flash = model('c-flash-3');
    expect(pricesAt(flash, new Date('2026-12-31T14:59:59Z'))).not.toMatchObject({ input: 1.5, output: 7.5 });
    expect(pricesAt(flash, new Date('2026-12-31T15:00:00Z'))).toMatchObject({ input: 1.5, output: 7.5 });
  });

  it('cache reads and writes are priced by their own buckets', () => {
    const a = model('a-top-5.5'); // 5 / 25, cache read 0.5, cache write 6.25
    const cost = costOfUsage(a, usage({ input_tokens: 1000, output_tokens: 200, cache_read_tokens: 300, cache_write_tokens: 100 }), ctx());
    expect(cost).toBe(BigInt(1000 * 5000 + 200 * 25000 + 300 * 500 + 100 * 6250));
  });

  it('odd counts from a vendor are rounded up, never thrown on', () => {
    expect(costOfUsage(model('a-top-5.5'), usage({ web_search_calls: 1.5 }), ctx())).toBe(20_000_000n);
    expect(costOfUsage(model('a-top-5.5'), usage({ output_tokens: 0.5 }), ctx())).toBe(25_000n);
    expect(costOfUsage(model('a-top-5.5'), usage({ output_tokens: Number.NaN, input_tokens: -3 }), ctx())).toBe(0n);
  });

  it('server-side tools are billed per call', () => {
    expect(costOfUsage(model('a-top-5.5'), usage({ web_search_calls: 2 }), ctx())).toBe(20_000_000n);
    expect(costOfUsage(model('b-5'), usage({ file_search_calls: 4 }), ctx())).toBe(10_000_000n);
  });
});

// The limit fields each wire format's vendors honour (transforms/protocols/).
const CHAT = protocols['chat-completions']!.limits;
const MESSAGES = protocols.messages!.limits;
const RESPONSES = protocols.responses!.limits;
const bounds = (id: string, body: JsonObject, honoured: HonouredLimits) => textBounds(model(id), body, snap.config.billing, honoured);
const reservation = (id: string, body: JsonObject, honoured: HonouredLimits) =>
  textReservation(model(id), bounds(id, body, honoured), ctx());

describe('reservation', () => {
  it('reserves max_tokens at the output price, the body bound at the input price, and the cache-write price only when caching is asked', () => {
    const body: JsonObject = { model: 'a-top-5.5', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] };
    const b = bounds('a-top-5.5', body, MESSAGES);
    expect(b.outputTokens).toBe(100);
    expect(b.cacheWrites).toBe(false);
    expect(reservation('a-top-5.5', body, MESSAGES)).toBe(tokenCost(b.inputTokens, 5) + tokenCost(100, 25));
    // A breakpoint anywhere (here the top level, the vendor's automatic caching) lets the vendor write the cache.
    const cached: JsonObject = { ...body, cache_control: { type: 'ephemeral' } };
    const c = bounds('a-top-5.5', cached, MESSAGES);
    expect(c.cacheWrites).toBe(true);
    expect(reservation('a-top-5.5', cached, MESSAGES)).toBe(tokenCost(c.inputTokens, 6.25) + tokenCost(100, 25));
    const deep: JsonObject = {
      ...body,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
    };
    expect(bounds('a-top-5.5', deep, MESSAGES).cacheWrites).toBe(true);
  });

  it('without max_tokens the model maximum is reserved; the context window caps the input bound', () => {
    const d = model('d-3');
    const huge = 'x'.repeat(2_000_000);
    const b = bounds('d-3', { messages: [{ role: 'user', content: huge }] }, CHAT);
    expect(b.outputTokens).toBe(d.max_output);
    expect(b.inputTokens).toBe(d.context_window);
  });

  it('a prompt that could pass the threshold is reserved at the tier price', () => {
    const body: JsonObject = { input: 'y'.repeat(400_000), max_output_tokens: 10 };
    expect(reservation('b-pro-5.4', body, RESPONSES)).toBeGreaterThanOrEqual(tokenCost(400_000, 60) + tokenCost(10, 270));
  });

  it('never reserves less than any usage the vendor can report for the body (property)', () => {
    const ids = [...snap.catalog.models.values()].filter((m) => m.kind === 'text').map((m) => m.id);
    fc.assert(
      fc.property(
        fc.constantFrom(...ids),
        fc.string({ maxLength: 3000 }),
        fc.integer({ min: 1, max: 200_000 }),
        fc.boolean(),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (id, text, maxTokens, caching, inFrac, outFrac) => {
          const m = model(id);
          const path = m.vendor === 'a' ? MESSAGES : CHAT;
          const body: JsonObject = {
            messages: [{ role: 'user', content: text }],
            max_tokens: maxTokens,
            ...(caching ? { cache_control: { type: 'ephemeral' } } : {}),
          };
          const b = bounds(id, body, path);
          // Any split of the bounded input into the buckets the vendor may report (a cache write only when the
          // body asks for caching, or the vendor caches by itself), any output up to the bound.
          const input = Math.floor(b.inputTokens * inFrac);
          const rest = b.inputTokens - input;
          const u = usage({
            input_tokens: input,
            ...(b.cacheWrites ? { cache_write_tokens: rest } : { cache_read_tokens: rest }),
            output_tokens: Math.floor(b.outputTokens * outFrac),
          });
          expect(costOfUsage(m, u, ctx())).toBeLessThanOrEqual(reservation(id, body, path));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('limits the reservation trusts', () => {
  it('the largest output limit the wire format honours; a field it ignores lowers nothing', () => {
    const msgs = [{ role: 'user', content: 'hi' }];
    expect(bounds('b-4.1', { messages: msgs, max_tokens: 1, max_completion_tokens: 30_000 }, CHAT)).toMatchObject({
      outputTokens: 30_000,
      outputLimit: { field: 'max_completion_tokens', value: 30_000 },
    });
    expect(bounds('b-4.1', { messages: msgs, max_tokens: 30_000, max_completion_tokens: 1 }, CHAT).outputTokens).toBe(30_000);
    // max_output_tokens is not a chat-completions field: the vendor would produce up to the model maximum.
    expect(bounds('b-4.1', { messages: msgs, max_output_tokens: 1 }, CHAT).outputTokens).toBe(32_768);
    expect(bounds('b-4.1', { input: 'hi', max_tokens: 1 }, RESPONSES).outputTokens).toBe(32_768);
    expect(bounds('a-top-5.5', { messages: msgs, max_tokens: 5, max_completion_tokens: 9 }, MESSAGES).outputTokens).toBe(5);
    // A wire format whose vendors honour no limit field trusts none.
    expect(bounds('b-4.1', { messages: msgs, max_tokens: 1 }, protocols.embeddings!.limits).outputTokens).toBe(32_768);
  });

  it('n multiplies the output and the server tools, up to the configured cap', () => {
    const body = (n: number): JsonObject => ({ messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100, n });
    expect(bounds('b-4.1', body(3), CHAT)).toMatchObject({ outputTokens: 300, outputPerChoice: 100, choices: { count: 3, field: 'n' } });
    expect(reservation('b-4.1', body(3), CHAT) - reservation('b-4.1', body(1), CHAT)).toBe(tokenCost(200, 8));
    const search: JsonObject = { ...body(2), tools: [{ type: 'web_search' }] };
    expect(bounds('b-4.1', search, CHAT).serverToolCalls.web_search).toBe(2 * snap.config.billing.reservation.max_server_tool_calls);
    const max = snap.config.billing.reservation.max_choices;
    expect(() => bounds('b-4.1', body(max + 1), CHAT)).toThrow(expect.objectContaining({ status: 400, param: 'n' }));
  });

  it('max_uses bounds searches only where the vendor enforces it', () => {
    const web = (extra: JsonObject): JsonObject => ({
      max_tokens: 10,
      messages: [{ role: 'user', content: 'q' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', ...extra }],
    });
    const unbounded = snap.config.billing.reservation.max_server_tool_calls;
    expect(bounds('a-top-5.5', web({ max_uses: 2 }), MESSAGES).serverToolCalls.web_search).toBe(2);
    expect(bounds('a-top-5.5', web({ max_uses: 50 }), MESSAGES).serverToolCalls.web_search).toBe(50);
    expect(bounds('a-top-5.5', web({ max_uses: null }), MESSAGES).serverToolCalls.web_search).toBe(unbounded);
    expect(bounds('b-5', { input: 'q', tools: [{ type: 'web_search', max_uses: 1 }] }, RESPONSES).serverToolCalls.web_search).toBe(
      unbounded,
    );
  });

  it('max_tool_calls bounds the server tools of the whole call on responses, the dearest tool held first', () => {
    const unbounded = snap.config.billing.reservation.max_server_tool_calls;
    const both = (extra: JsonObject): JsonObject => ({ input: 'q', tools: [{ type: 'file_search' }, { type: 'web_search' }], ...extra });
    // Without it, each tool holds the allowance.
    expect(bounds('b-5', both({}), RESPONSES).serverToolCalls).toEqual({ web_search: unbounded, file_search: unbounded });
    // One cap for the call: every call may be a web search (the dearer), so all are held as such.
    expect(bounds('b-5', both({ max_tool_calls: 3 }), RESPONSES).serverToolCalls).toEqual({ web_search: 3, file_search: 0 });
    // Above the per-tool allowance: the cap, not the allowance, bounds what the vendor does.
    expect(bounds('b-5', both({ max_tool_calls: 25 }), RESPONSES).serverToolCalls).toEqual({ web_search: 25, file_search: 0 });
    expect(bounds('b-5', { input: 'q', tools: [{ type: 'file_search' }], max_tool_calls: 4 }, RESPONSES).serverToolCalls).toEqual({
      web_search: 0,
      file_search: 4,
    });
    // Not a field the messages format enforces: it lowers nothing there.
    const web = {
      max_tokens: 10,
      messages: [{ role: 'user', content: 'q' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      max_tool_calls: 1,
    };
    expect(bounds('a-top-5.5', web, MESSAGES).serverToolCalls.web_search).toBe(unbounded);
  });

  it.each([
    [{ max_tokens: 0 }, 'max_tokens'],
    [{ max_tokens: -3 }, 'max_tokens'],
    [{ max_completion_tokens: 1.5 }, 'max_completion_tokens'],
    [{ max_output_tokens: '10' }, 'max_output_tokens'],
    [{ n: 0 }, 'n'],
    [{ n: false }, 'n'],
    [
      {
        tools: [
          { type: 'function', function: { name: 'f' } },
          { type: 'web_search_20250305', name: 'web_search', max_uses: -1 },
        ],
      },
      'tools[1].max_uses',
    ],
    [{ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 0 }] }, 'tools[0].max_uses'],
    [{ max_tool_calls: 0 }, 'max_tool_calls'],
    [{ max_tool_calls: -1 }, 'max_tool_calls'],
  ])('%j is a 400 naming %s, wherever it is sent', (extra, param) => {
    for (const path of [CHAT, MESSAGES, RESPONSES]) {
      expect(() => bounds('a-top-5.5', { messages: [{ role: 'user', content: 'hi' }], ...(extra as JsonObject) }, path)).toThrow(
        expect.objectContaining({ status: 400, type: 'invalid_request_error', param }),
      );
    }
  });
});

describe('what a vendor adds to the body', () => {
  const billing = snap.config.billing.reservation;
  const base = (extra: JsonObject = {}): JsonObject => ({ max_tokens: 1, messages: [{ role: 'user', content: 'hi' }], ...extra });
  const input = (id: string, body: JsonObject) => bounds(id, body, MESSAGES).inputTokens;

  it('framing per call and per message, by vendor', () => {
    expect(input('a-top-5.5', base())).toBe(measureBody(base()).bytes + billing.framing_per_call.a! + billing.framing_per_message.a!);
    const two = base({
      system: 'be brief',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'ho' },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(input('a-top-5.5', two)).toBe(measureBody(two).bytes + billing.framing_per_call.a! + 4 * billing.framing_per_message.a!);
    expect(input('e-open-405b', base())).toBe(measureBody(base()).bytes + billing.framing_per_call.e! + billing.framing_per_message.e!);
  });

  it('a tool prompt only when tools are given, and a definition per vendor-defined tool', () => {
    const plain = input('a-top-5.5', base());
    const fn = { name: 'f', input_schema: { type: 'object' } };
    const withFn = base({ tools: [fn] });
    expect(input('a-top-5.5', withFn) - plain).toBe(measureBody(withFn).bytes - measureBody(base()).bytes + billing.tool_prompt_tokens);
    const withServer = base({ tools: [fn, { type: 'bash_20250124', name: 'bash' }] });
    expect(input('a-top-5.5', withServer) - plain).toBe(
      measureBody(withServer).bytes - measureBody(base()).bytes + billing.tool_prompt_tokens + billing.vendor_tool_tokens,
    );
    expect(input('a-top-5.5', base({ tools: [] }))).toBe(plain + measureBody(base({ tools: [] })).bytes - measureBody(base()).bytes);
  });

  it('top-level settings are not prompt text: the model id, numbers and switches', () => {
    expect(measureBody({ model: 'a-top-5.5', max_tokens: 4096, stream: true, temperature: null, messages: [] }).bytes).toBe(
      measureBody({ messages: [] }).bytes,
    );
    // Below the top level everything counts, numbers included (they are tool arguments or schema values).
    expect(measureBody({ tools: [{ n: 12345 }] }).bytes).toBeGreaterThan(measureBody({ tools: [{}] }).bytes);
  });
});

describe('measuring a body for the reservation', () => {
  it('counts image parts as the image allowance, by URL or inline, and long text byte for byte', () => {
    const b64 = 'A'.repeat(50_000);
    const user = (...content: JsonValue[]) => ({ messages: [{ role: 'user', content }] });
    expect(measureBody(user({ type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } })).images).toBe(1);
    expect(measureBody(user({ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } })).images).toBe(1);
    expect(measureBody(user({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64 } })).images).toBe(1);
    expect(
      measureBody({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${b64}` }] }] }).images,
    ).toBe(1);
    expect(measureBody(user({ type: 'document', source: { type: 'base64', media_type: 'image/png', data: b64 } })).images).toBe(1);
    expect(measureBody(user({ type: 'text', text: 'x', source: { type: 'base64', media_type: 'image/png', data: b64 } })).images).toBe(0);
    const inToolResult = user({
      type: 'tool_result',
      tool_use_id: 't',
      content: [{ type: 'image', source: { type: 'url', url: 'https://x' } }],
    });
    expect(measureBody(inToolResult).images).toBe(1);
    const text = measureBody({ content: b64 });
    expect(text.images).toBe(0);
    expect(text.bytes).toBeGreaterThanOrEqual(50_000);
  });

  it('counts what only looks like an image where the vendor reads text as text, and an image anywhere as an image too', () => {
    const long = ' hello'.repeat(10_000);
    // A data URI in a text position is text; an image-shaped object outside a message's content (an image part
    // at the top, an image-typed object in a tool's schema, an image in the system prompt or inside a document's
    // own content) may be read as text or billed as an image, so it counts both.
    const asText = [
      { messages: [{ role: 'user', content: `data:image/png;${long}` }] },
      { system: `data:image/png;${long}`, messages: [] },
    ];
    const asBoth = [
      { content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${long}` } }] },
      { tools: [{ name: 'f', input_schema: { properties: { x: { type: 'image', description: long } } } }] },
      { system: [{ type: 'image', source: { type: 'url', url: `https://x/${long}` } }], messages: [] },
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'document', source: { type: 'content', content: [{ type: 'image', source: { type: 'url', url: long } }] } }],
          },
        ],
      },
    ];
    for (const [images, bodies] of [
      [0, asText],
      [1, asBoth],
    ] as const) {
      for (const body of bodies as JsonObject[]) {
        const m = measureBody(body);
        expect(m.images).toBe(images);
        expect(m.bytes).toBeGreaterThan(long.length);
      }
    }
    // A document the vendors do not read as text is billed as an image, whatever its few bytes say.
    expect(measureBody({ messages: [{ role: 'user', content: [{ type: 'document' }] }] }).images).toBe(1);
  });

  it('counts every separator of the JSON: a list of numbers is as many commas as numbers', () => {
    const zeros = measureBody({ tools: [{ enum: Array(10_000).fill(0) }] }).bytes;
    expect(zeros).toBeGreaterThanOrEqual(2 * 10_000);
    const members = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, 0]));
    expect(measureBody({ tools: [members] }).bytes).toBeGreaterThanOrEqual(JSON.stringify([members]).length);
  });

  it('counts a string as its JSON escapes: a control character is six bytes of the body', () => {
    const plain = measureBody({ tools: [{ description: 'x'.repeat(1000) }] }).bytes;
    expect(measureBody({ tools: [{ description: '\u0001'.repeat(1000) }] }).bytes).toBe(plain + 5 * 1000);
    expect(measureBody({ tools: [{ description: '"'.repeat(1000) }] }).bytes).toBe(plain + 1000);
    expect(measureBody({ tools: [{ description: '가'.repeat(1000) }] }).bytes).toBe(plain + 2 * 1000);
  });
});

describe('the bounds cover what the vendor counts, through each door (property)', () => {
  // Random bodies go through the door's request chain as a call does (prepareCall), then the simulator, which
  // counts as the vendors do, counts the body the vendor gets: its input tokens never pass the input bound,
  // and the output limit it obeys (capped by the model) never passes the output bound.
  const registry = { protocols };
  const caller: Caller = { keyId: 'k', walletId: 'w', keyPrefix: 'sk-test', audience: null };
  const text = fc.string({ unit: 'binary', minLength: 1, maxLength: 600 });
  const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
  const schema = fc.record({
    type: fc.constant('object'),
    properties: fc.dictionary(
      fc.string({ minLength: 1, maxLength: 8 }),
      fc.record({ type: fc.constantFrom('string', 'integer'), description: text }),
    ),
  });
  const name = fc.stringMatching(/^[a-z_]{1,12}$/);
  const PNG = `data:image/png;base64,${'A'.repeat(200)}`;
  const limits = (fields: string[]) =>
    fc.record(Object.fromEntries(fields.map((f) => [f, fc.integer({ min: 1, max: 200_000 })])), { requiredKeys: [] });

  const chatPart = fc.oneof(fc.record({ type: fc.constant('text'), text }), fc.constant({ type: 'image_url', image_url: { url: PNG } }));
  const chatContent = fc.oneof(text, fc.array(chatPart, { minLength: 1, maxLength: 3 }));
  const chatTurns = fc
    .array(
      fc.oneof(
        fc.record({ role: fc.constant('user'), content: chatContent }),
        fc.record({ role: fc.constant('assistant'), content: text }),
        fc.tuple(name, json, text).map(([fn, args, result]) => [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: fn, arguments: JSON.stringify({ args }) } }],
          },
          { role: 'tool', tool_call_id: 'call_1', content: result },
        ]),
      ),
      { minLength: 1, maxLength: 5 },
    )
    .map((turns) => turns.flat());
  const chatTools = fc.array(
    fc.record({ type: fc.constant('function'), function: fc.record({ name, description: text, parameters: schema }) }),
    { maxLength: 3 },
  );
  const chatBody = (limitFields: string[]) =>
    fc.tuple(fc.option(text, { nil: undefined }), chatTurns, chatTools, limits(limitFields)).map(([system, turns, tools, lim]) => ({
      messages: [...(system ? [{ role: 'system', content: system }] : []), ...turns, { role: 'user', content: 'last' }],
      ...(tools.length ? { tools } : {}),
      ...lim,
    }));

  const block = fc.oneof(
    fc.record({ type: fc.constant('text'), text }),
    fc.constant({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'A'.repeat(200) } }),
    fc.record({
      type: fc.constant('document'),
      source: fc.record({ type: fc.constant('text'), media_type: fc.constant('text/plain'), data: text }),
    }),
    fc.record({ type: fc.constant('thinking'), thinking: text, signature: text }),
    fc.tuple(name, json).map(([n, input]) => ({ type: 'tool_use', id: 'toolu_1', name: n, input: { input } })),
    fc.tuple(text).map(([c]) => ({ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: c }] })),
  );
  const messagesBody = fc
    .tuple(
      fc.option(text, { nil: undefined }),
      fc.array(
        fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.oneof(text, fc.array(block, { minLength: 1, maxLength: 3 })) }),
        { minLength: 1, maxLength: 5 },
      ),
      fc.array(
        fc.oneof(
          fc.record({ name, description: text, input_schema: schema }),
          fc.constant({ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }),
        ),
        { maxLength: 3 },
      ),
      fc.integer({ min: 1, max: 200_000 }),
      limits(['max_completion_tokens', 'max_output_tokens']),
    )
    .map(([system, messages, tools, max_tokens, lim]) => ({
      ...(system ? { system } : {}),
      messages,
      ...(tools.length ? { tools } : {}),
      max_tokens,
      ...lim,
    }));

  const inputItem = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'assistant'), content: text }),
    fc.record({
      role: fc.constant('user'),
      content: fc.array(
        fc.oneof(fc.record({ type: fc.constant('input_text'), text }), fc.constant({ type: 'input_image', image_url: PNG })),
        { minLength: 1, maxLength: 3 },
      ),
    }),
    fc.tuple(name, json).map(([n, args]) => ({ type: 'function_call', call_id: 'c1', name: n, arguments: JSON.stringify({ args }) })),
    fc.record({ type: fc.constant('function_call_output'), call_id: fc.constant('c1'), output: text }),
  );
  const responsesBody = fc
    .tuple(
      fc.option(text, { nil: undefined }),
      fc.oneof(text, fc.array(inputItem, { minLength: 1, maxLength: 5 })),
      fc.array(fc.record({ type: fc.constant('function'), name, description: text, parameters: schema }), { maxLength: 3 }),
      limits(['max_output_tokens', 'max_tokens']),
    )
    .map(([instructions, input, tools, lim]) => ({
      ...(instructions ? { instructions } : {}),
      input,
      ...(tools.length ? { tools } : {}),
      ...lim,
    }));

  const cases: [
    string,
    string,
    fc.Arbitrary<JsonObject>,
    (b: Record<string, unknown>) => { inputTokens: number; maxTokens?: number | undefined },
  ][] = [
    ['chat', 'a-top-5', chatBody(['max_tokens', 'max_completion_tokens']) as fc.Arbitrary<JsonObject>, messagesTurn],
    ['chat', 'b-4.1', chatBody(['max_tokens', 'max_completion_tokens', 'max_output_tokens']) as fc.Arbitrary<JsonObject>, chatTurn],
    ['chat', 'c-pro-3-preview', chatBody(['max_tokens', 'max_completion_tokens']) as fc.Arbitrary<JsonObject>, chatTurn],
    ['chat', 'd-4', chatBody(['max_tokens']) as fc.Arbitrary<JsonObject>, chatTurn],
    ['chat', 'e-open-405b', chatBody(['max_completion_tokens']) as fc.Arbitrary<JsonObject>, chatTurn],
    ['messages', 'a-top-5', messagesBody as fc.Arbitrary<JsonObject>, messagesTurn],
    ['responses', 'b-6', responsesBody as fc.Arbitrary<JsonObject>, responsesTurn],
  ];

  it.each(cases)('%s door, %s', (doorName, id, bodies, count) => {
    const door = snap.config.doors[doorName]!;
    const m = model(id);
    fc.assert(
      fc.property(bodies, (client) => {
        const { call, wire } = prepareCall(snap, door, { model: id, ...client }, { 'anthropic-version': '2023-06-01' }, caller, registry, {
          now: NOW,
        });
        const b = textBounds(m, call.body, snap.config.billing, wire.limits);
        const counted = count(call.body);
        expect(counted.inputTokens).toBeLessThanOrEqual(b.inputTokens);
        expect(Math.min(counted.maxTokens ?? Infinity, m.max_output ?? 0)).toBeLessThanOrEqual(b.outputPerChoice);
      }),
      { numRuns: 150 },
    );
  });
});
