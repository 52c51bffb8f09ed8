// Attack (wt-attack, issue 39 follow-up): fields inside a tool that bound what the vendor bills (max_uses,
// max_num_results, an advisor's max_tokens, an advisor's model) sent in another case or form beside, or instead
// of, the exact spelling. The gateway reads the exact name; a vendor whose decoder folds case (the threat the
// top-level and tools[].model spelling checks already answer) reads the other. Each asserts the refusal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A_VERSION, post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

async function probe(path: string, body: unknown, headers: Record<string, string> = {}) {
  const sent = t.sim.received.length;
  const before = await t.balance();
  const res = await post(t, path, body, headers);
  const text = await res.text();
  const got = t.sim.received.slice(sent).map((r) => r.body);
  const after = await t.balance();
  return { status: res.status, text: text.slice(0, 300), vendorBodies: got, charged: String(before - after) };
}

const msgs = [{ role: 'user', content: 'find it' }];

describe('nested tool fields spelled otherwise', () => {
  it('messages: web_search max_uses 1 beside MAX_USES 50', async () => {
    const r = await probe(
      '/v1/messages',
      {
        model: 'a-small-4.5',
        max_tokens: 16,
        messages: msgs,
        tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1, MAX_USES: 50 }],
      },
      A_VERSION,
    );
    expect(r.status, r.text).toBe(400);
  });

  it('messages: web_search with only Max_Uses 50 (gateway writes max_uses 10 beside it)', async () => {
    const r = await probe(
      '/v1/messages',
      { model: 'a-small-4.5', max_tokens: 16, messages: msgs, tools: [{ type: 'web_search_20250305', name: 'web_search', Max_Uses: 50 }] },
      A_VERSION,
    );
    expect(r.status, r.text).toBe(400);
  });

  it('messages: advisor max_tokens 16 beside MAX_TOKENS 32000', async () => {
    const r = await probe(
      '/v1/messages',
      {
        model: 'a-small-4.5',
        max_tokens: 16,
        messages: msgs,
        tools: [{ type: 'advisor_20260301', name: 'advisor', model: 'a-small-4.5', max_uses: 1, max_tokens: 16, MAX_TOKENS: 32000 }],
      },
      A_VERSION,
    );
    expect(r.status, r.text).toBe(400);
  });

  // File searches here carry no vector_store_ids, which are refused whatever the spelling (no vector store is a
  // wallet's): the spelling is what each refusal is about.
  it('responses: file_search max_num_results 1 beside MAX_NUM_RESULTS 50', async () => {
    const r = await probe('/v1/responses', {
      model: 'b-5',
      input: 'find it',
      max_output_tokens: 16,
      tools: [{ type: 'file_search', max_num_results: 1, MAX_NUM_RESULTS: 50 }],
    });
    expect(r.status, r.text).toBe(400);
  });

  it('responses: tool type spelled File_Search (not a server tool to the gateway)', async () => {
    const r = await probe('/v1/responses', {
      model: 'b-5',
      input: 'find it',
      max_output_tokens: 16,
      tools: [{ type: 'File_Search' }],
    });
    expect(r.status, r.text).toBe(400);
  });

  it('messages: tool type spelled Web_Search_20250305', async () => {
    const r = await probe(
      '/v1/messages',
      { model: 'a-small-4.5', max_tokens: 16, messages: msgs, tools: [{ type: 'Web_Search_20250305', name: 'web_search' }] },
      A_VERSION,
    );
    expect(r.status, r.text).toBe(400);
  });

  it('messages: advisor type spelled Advisor_20260301 with a dear model', async () => {
    const r = await probe(
      '/v1/messages',
      { model: 'a-small-4.5', max_tokens: 16, messages: msgs, tools: [{ type: 'Advisor_20260301', name: 'advisor', model: 'a-top-5' }] },
      A_VERSION,
    );
    expect(r.status, r.text).toBe(400);
  });

  it('responses: TOOLS list spelled otherwise at top level', async () => {
    const r = await probe('/v1/responses', { model: 'b-5', input: 'x', max_output_tokens: 16, Tools: [{ type: 'web_search' }] });
    expect(r.status, r.text).toBe(400);
  });

  it('responses: web_search tool with search_context_size high and max_tool_calls absent is capped', async () => {
    const r = await probe('/v1/responses', {
      model: 'b-5',
      input: 'x',
      max_output_tokens: 16,
      tools: [{ type: 'web_search', search_context_size: 'high' }],
    });
    expect(r.status, r.text).toBe(200);
  });
});

// The same bodies on a wallet of $0.03: the exact spelling of the larger figure is refused 402 (the hold covers
// it), the folded spelling beside a small exact one is served with the larger figure passed on to the vendor.
describe('the hold reads only the exact spelling: a small wallet', () => {
  let s: TestGateway;
  beforeAll(async () => {
    s = await startTestGateway({ credits: 30_000 });
  });
  afterAll(() => s?.close());
  const search = (extra: Record<string, unknown>) => ({
    model: 'a-small-4.5',
    max_tokens: 16,
    messages: msgs,
    tools: [{ type: 'web_search_20250305', name: 'web_search', ...extra }],
  });
  it('control: max_uses 50 in the exact spelling is 402', async () => {
    const res = await post(s, '/v1/messages', search({ max_uses: 50 }), A_VERSION);
    expect(res.status, await res.text()).toBe(402);
  });
  it('max_uses 1 beside MAX_USES 50 is refused like max_uses 50', async () => {
    const sent = s.sim.received.length;
    const res = await post(s, '/v1/messages', search({ max_uses: 1, MAX_USES: 50 }), A_VERSION);
    const text = await res.text();
    expect([400, 402], text).toContain(res.status);
    expect(s.sim.received.length, 'nothing sent').toBe(sent);
  });
  const fileSearch = (extra: Record<string, unknown>) => ({
    model: 'b-5',
    input: 'find it',
    max_output_tokens: 16,
    max_tool_calls: 1,
    tools: [{ type: 'file_search', ...extra }],
  });
  it('control: file_search max_num_results 50 in the exact spelling is 402', async () => {
    const res = await post(s, '/v1/responses', fileSearch({ max_num_results: 50 }));
    expect(res.status, await res.text()).toBe(402);
  });
  it('file_search max_num_results 1 beside MAX_NUM_RESULTS 50 is refused like 50', async () => {
    const res = await post(s, '/v1/responses', fileSearch({ max_num_results: 1, MAX_NUM_RESULTS: 50 }));
    const text = await res.text();
    expect([400, 402], text).toContain(res.status);
  });
});

// A cache mark spelled otherwise: the hold prices the prompt at the input price (no mark seen: text-bounds.ts
// marksCache reads `cache_control` exactly), a case-folding vendor writes the cache at 1.25 × input.
describe('a cache mark spelled otherwise on /v1/messages', () => {
  it('Cache_Control on a content block is refused like any other spelling', async () => {
    const r = await probe(
      '/v1/messages',
      {
        model: 'a-top-5.5',
        max_tokens: 16,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'long prompt', Cache_Control: { type: 'ephemeral', ttl: '1h' } }] }],
      },
      A_VERSION,
    );
    expect(r.status, r.text).toBe(400);
  });
});
