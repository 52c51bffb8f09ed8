// For each door and each way a call can make the vendor bill beyond its visible text (server tools, file search
// with its max_num_results, advisors, page fetches, remote MCP servers, tool search, the passes of a server-side loop, compaction, reasoning,
// images and inline PDFs in the input, cache writes kept 5 minutes or an hour, several answers), the most
// the simulated vendor may bill for a generated body (simulator/largest-usage.ts, on the body the vendor gets
// after the door's chain) costs no more than the call's hold (issue 39). Pure: prepareCall, the reservation and
// the cost of usage, no database.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { holdFor } from '../../engine/calls/hold-size.ts';
import { prepareCall } from '../../engine/calls/prepare.ts';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { costOfUsage } from '../../engine/catalog/usage-cost.ts';
import { isGatewayError } from '../../engine/core/errors.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import type { Caller } from '../../engine/money/accounts.ts';
import { largestUsage } from '../../simulator/largest-usage.ts';
import { protocols } from '../../transforms/protocols/index.ts';

const snap = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);
const NOW = new Date('2026-11-21T03:00:00Z');
const registry = { protocols };
const caller: Caller = { keyId: 'k', walletId: 'w', keyPrefix: 'sk-test', audience: null };
const pricing = { billing: snap.config.billing, modelById: (id: string) => snap.catalog.models.get(id), at: NOW };

const textModels = (door: string, vendor: string) =>
  [...snap.catalog.models.values()].filter((m) => m.vendor === vendor && m.doors.includes(door) && !m.sale_ends).map((m) => m.id);

const words = fc.string({ minLength: 1, maxLength: 400 });
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const limit = (most: number) => opt(fc.integer({ min: 1, max: most }));
const IMAGE = 'data:image/png;base64,iVBORw0KGgo=';
/** An inline PDF of bare pages: a few bytes each, billed per page (simulator PDF_PAGE_TOKENS). */
const pdf = (pages: number) => Buffer.from(`%PDF-1.4\n${'1 0 obj <</Type /Page>> endobj\n'.repeat(pages)}%%EOF\n`).toString('base64');
const pdfPages = opt(fc.integer({ min: 1, max: 100 }));

/** Generated bodies per door and tool, as a client sends them. */
function bodies(door: string): fc.Arbitrary<JsonObject>[] {
  const A = textModels('messages', 'a');
  if (door === 'messages') {
    // A cache breakpoint kept the default 5 minutes, or an hour at its own price.
    const cacheMark = fc.constantFrom<JsonObject | undefined>(undefined, { type: 'ephemeral' }, { type: 'ephemeral', ttl: '1h' });
    const content = fc.tuple(words, fc.nat({ max: 3 }), cacheMark, pdfPages).map(([t, images, cache, pages]) => [
      { type: 'text', text: t, ...(cache ? { cache_control: cache } : {}) },
      ...Array.from({ length: images }, () => ({
        type: 'image',
        source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' },
      })),
      ...(pages ? [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf(pages) } }] : []),
    ]);
    const base = fc.record({
      model: fc.constantFrom(...A),
      max_tokens: fc.integer({ min: 1, max: 64_000 }),
      content,
      thinking: fc.boolean(),
    });
    const tools: fc.Arbitrary<object[]>[] = [
      fc.constant([]),
      fc.array(fc.record({ type: fc.constant('web_search_20250305'), name: fc.constant('web_search'), max_uses: limit(30) }), {
        minLength: 1,
        maxLength: 2,
      }),
      fc.array(
        fc.record({
          type: fc.constant('advisor_20260301'),
          name: fc.constant('advisor'),
          model: fc.constantFrom(...A),
          max_uses: limit(5),
          max_tokens: limit(8000),
        }),
        { minLength: 1, maxLength: 2 },
      ),
      fc.constant([{ name: 'f', description: 'x', input_schema: { type: 'object', properties: {} } }]),
      // A page fetch: each use may fill the context window, and is followed by another pass.
      fc.array(fc.record({ type: fc.constant('web_fetch_20250910'), name: fc.constant('web_fetch'), max_uses: limit(5) }), {
        minLength: 1,
        maxLength: 2,
      }),
      // Searches and an advisor in one loop.
      fc.tuple(limit(10), limit(3), fc.constantFrom(...A)).map(([searches, uses, model]) => [
        { type: 'web_search_20250305', name: 'web_search', max_uses: searches },
        { type: 'advisor_20260301', name: 'advisor', model, max_uses: uses },
      ]),
      // Tool search over deferred tools of the body's own: each search loads definitions again, another pass.
      fc.tuple(fc.constantFrom('tool_search_tool_regex_20251119', 'tool_search_tool_bm25_20251119'), words).map(([type, d]) => [
        { type, name: 'tool_search' },
        { name: 'lookup', description: d, input_schema: { type: 'object', properties: {} }, defer_loading: true },
      ]),
      // A search beside a tool search: both loops in one call.
      fc.tuple(limit(10)).map(([searches]) => [
        { type: 'web_search_20250305', name: 'web_search', max_uses: searches },
        { type: 'tool_search_tool_regex_20251119', name: 'tool_search' },
      ]),
    ];
    // A remote MCP server (the native connector): its tools' results re-enter the prompt, each a pass.
    const servers = fc.option(fc.constant<JsonObject[]>([{ type: 'url', url: 'https://mcp.example.com/sse', name: 'docs' }]), {
      nil: undefined,
    });
    // Compaction: the vendor may summarise the prompt before each pass, at the model's prices.
    const compaction = fc.boolean();
    return tools.map((toolSet) =>
      fc.tuple(base, toolSet, compaction, servers).map(([b, t, compact, mcp]) => ({
        model: b.model,
        max_tokens: b.max_tokens,
        ...(mcp ? { mcp_servers: mcp } : {}),
        ...(compact ? { context_management: { edits: [{ type: 'compact_20260112' }] } } : {}),
        // Reasoning: a thinking budget below the output limit, as the vendor requires.
        ...(b.thinking && b.max_tokens > 1024 ? { thinking: { type: 'enabled', budget_tokens: 1024 } } : {}),
        messages: [{ role: 'user', content: b.content }],
        ...(t.length ? { tools: t.map(clean) } : {}),
      })),
    );
  }
  if (door === 'responses') {
    const B = textModels('responses', 'b');
    const input = fc.tuple(words, fc.nat({ max: 3 }), pdfPages).map(([t, images, pages]) => [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: t },
          ...Array.from({ length: images }, () => ({ type: 'input_image', image_url: IMAGE })),
          ...(pages ? [{ type: 'input_file', filename: 'f.pdf', file_data: `data:application/pdf;base64,${pdf(pages)}` }] : []),
        ],
      },
    ]);
    const base = fc.record({
      model: fc.constantFrom(...B),
      input,
      max_output_tokens: limit(100_000),
      max_tool_calls: limit(20),
      reasoning: opt(fc.constantFrom('low', 'high')),
    });
    const tools: fc.Arbitrary<object[]>[] = [
      fc.constant([]),
      fc.constant([{ type: 'web_search' }]),
      // File searches without vector_store_ids, which are refused (no vector store is a wallet's): held all the same.
      fc.array(fc.record({ type: fc.constant('file_search'), max_num_results: limit(50) }), {
        minLength: 1,
        maxLength: 2,
      }),
      fc.tuple(limit(50)).map(([n]) => [{ type: 'web_search' }, { type: 'file_search', ...(n ? { max_num_results: n } : {}) }]),
      // A remote MCP server: each of its calls (under max_tool_calls, as the built-in tools') feeds back a result of any size.
      fc.constant([{ type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com/sse', require_approval: 'never' }]),
      fc.constant([{ type: 'web_search' }, { type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com/sse' }]),
    ];
    return tools.map((toolSet) =>
      fc.tuple(base, toolSet).map(([b, t]) => {
        const { reasoning, ...rest } = clean(b);
        return { ...rest, ...(reasoning ? { reasoning: { effort: reasoning } } : {}), ...(t.length ? { tools: t.map(clean) } : {}) };
      }),
    );
  }
  // The chat door: every vendor, several answers where the format takes them, images, reasoning effort.
  return ['a', 'b', 'c', 'd', 'e'].map((vendor) =>
    fc
      .record({
        model: fc.constantFrom(...textModels('chat', vendor)),
        text: words,
        cache: fc.boolean(),
        images: fc.nat({ max: 3 }),
        max_completion_tokens: limit(100_000),
        n: vendor === 'a' ? fc.constant(undefined) : limit(4),
        reasoning_effort: opt(fc.constantFrom('low', 'high')),
      })
      .map(({ text, images, cache, ...b }) => ({
        ...clean(b),
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text, ...(cache ? { cache_control: { type: 'ephemeral' } } : {}) },
              ...Array.from({ length: images }, () => ({ type: 'image_url', image_url: { url: IMAGE } })),
            ],
          },
        ],
      })),
  );
}

/** The object without its undefined entries, as JSON would carry it. */
const clean = (o: object): JsonObject => JSON.parse(JSON.stringify(o)) as JsonObject;

const UPSTREAM: Record<string, string> = {
  messages: '/v1/messages',
  'chat-completions': '/v1/chat/completions',
  responses: '/v1/responses',
};

describe("the hold covers the simulator's largest usage, per door and tool (property, issue 39)", () => {
  const cases = ['messages', 'responses', 'chat'].flatMap((door) => bodies(door).map((arb, i) => [door, i, arb] as const));

  it.each(cases)('%s door, tool set %i', (doorName, _i, arb) => {
    const door = snap.config.doors[doorName]!;
    let served = 0;
    fc.assert(
      fc.property(arb, (client) => {
        let prepared: ReturnType<typeof prepareCall>;
        let hold: bigint;
        try {
          prepared = prepareCall(snap, door, client, { 'anthropic-version': '2023-06-01' }, caller, registry, { now: NOW });
          hold = holdFor(door, prepared.call, snap, NOW).amount;
        } catch (e) {
          // A body the door, the model's rules or the reservation refuse before anything is held: nothing to bill.
          if (isGatewayError(e) && e.status === 400) return;
          throw e;
        }
        const { call, protocolName } = prepared;
        const bills = largestUsage(UPSTREAM[protocolName]!, call.body, (id) => snap.catalog.models.get(id));
        expect(bills.length).toBeGreaterThan(0);
        for (const bill of bills) {
          const counts = [bill.input_tokens, bill.output_tokens, bill.cache_write_tokens, bill.web_search_calls, bill.file_search_calls];
          const all = [...counts, ...bill.advisor.flatMap((a) => [a.input_tokens, a.output_tokens])];
          expect(all.every(Number.isFinite), `the body leaves the vendor unbounded: ${JSON.stringify(bill)}`).toBe(true);
          const cost = costOfUsage(call.model, { ...bill, cache_read_tokens: 0 }, pricing);
          expect(cost, JSON.stringify({ body: call.body, bill })).toBeLessThanOrEqual(hold);
        }
        served++;
      }),
      { numRuns: 150 },
    );
    expect(served).toBeGreaterThan(0);
  });
});
