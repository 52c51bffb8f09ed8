// Server tools (web search, file search) run as many calls as the vendor decides unless the request caps them:
// vendor A by a tool's max_uses, the responses format by the call's max_tool_calls. The hold covers
// reservation.max_server_tool_calls per uncapped tool, so the gateway writes that cap into the body: the vendor
// never does more than the hold covers. A client's own cap is kept and held.
// Over loopback HTTP against an in-process gateway and its simulator (which honours the caps as vendors do);
// prices are copied from catalog/*.yaml, not computed by the gateway's pricing code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../engine/catalog/config.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { journalSum } from '../helpers/ledger.ts';
import { A_VERSION, nano, post, WEB_SEARCH_NANO } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const HELD_SEARCHES = loadConfig('config').billing.reservation.max_server_tool_calls;

interface Client {
  walletId: string;
  as: TestGateway;
}

async function walletOf(credits: number): Promise<Client> {
  const wallet = await t.gw.ledger.createWallet({ credits });
  const { key } = await t.gw.keys.createApiKey(wallet.id, { name: `w${credits}` });
  return { walletId: wallet.id, as: { ...t, apiKey: key, walletId: wallet.id } };
}

const available = async (c: Client) => (await t.gw.ledger.balance(c.walletId)).availableNano;

/** Nothing held, the journal adds up, and no settled call was charged beyond its hold. */
async function expectSettledBooks(c: Client) {
  const balance = await t.gw.ledger.balance(c.walletId);
  expect(balance.reservedNano, 'a hold was left behind').toBe(0n);
  const journal = await journalSum(t.gw.db, c.walletId);
  expect(journal.availableNano).toBe(balance.availableNano);
  const rows = await t.gw.db.query<{ amount_nano: string; charged_nano: string | null; state: string }>(
    'SELECT amount_nano::text, charged_nano::text, state FROM reservations WHERE wallet_id = $1',
    [c.walletId],
  );
  for (const r of rows.rows) {
    if (r.state === 'settled') expect(BigInt(r.charged_nano ?? '0')).toBeLessThanOrEqual(BigInt(r.amount_nano));
  }
}

const lastBody = (v: 'a' | 'b', path: string) => {
  const sent = t.received(v).filter((r) => r.path === path);
  return sent[sent.length - 1]?.body as any;
};

// 500,000 credits = $0.50: the hold of 10 searches (fees, and the result pages held as input:
// billing.yaml reservation.search_result_tokens, read again by each pass of the loop after a search), fewer
// than the 40 searches the prompt asks for, and less than the hold of 20 (messages) or 30 (responses).
const WALLET = 500_000;
const TOKENS = '[[sim:usage input=1000 output=10]]';
const WEB_A = { type: 'web_search_20250305', name: 'web_search' };

// b-5-nano: $0.05 / $0.40 per 1M tokens. a-small-4.5: $0.25 / $1.25.
const B_TOKENS = nano(1000, 0.05) + nano(10, 0.4);
const A_TOKENS = nano(1000, 0.25) + nano(10, 1.25);

const responsesBody = (extra: Record<string, unknown> = {}) => ({
  model: 'b-5-nano',
  input: `hi [[sim:web_search=40]] ${TOKENS}`,
  tools: [{ type: 'web_search' }],
  max_output_tokens: 16,
  ...extra,
});

const messagesBody = (tool: Record<string, unknown> = WEB_A) => ({
  model: 'a-small-4.5',
  max_tokens: 16,
  tools: [tool],
  messages: [{ role: 'user', content: `hi [[sim:web_search=40]] ${TOKENS}` }],
});

const searchesOfResponse = (r: any) => r.output.filter((o: any) => o.type === 'web_search_call').length;

describe('a server tool without a cap is capped at what the hold covers', () => {
  it('responses: the vendor gets max_tool_calls, searches no more than held, and all it did is charged', async () => {
    const c = await walletOf(WALLET);
    const res = await post(c.as, '/v1/responses', responsesBody());
    const answer = (await res.json()) as any;
    expect(res.status, JSON.stringify(answer)).toBe(200);
    expect(lastBody('b', '/v1/responses').max_tool_calls).toBe(HELD_SEARCHES);
    const searches = searchesOfResponse(answer);
    expect(searches).toBe(HELD_SEARCHES);
    expect(BigInt(WALLET) * 1000n - (await available(c))).toBe(B_TOKENS + BigInt(searches) * WEB_SEARCH_NANO);
    await expectSettledBooks(c);
  });

  it('responses streamed: the same cap and the same charge', async () => {
    const c = await walletOf(WALLET);
    const res = await post(c.as, '/v1/responses', responsesBody({ stream: true }));
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(lastBody('b', '/v1/responses').max_tool_calls).toBe(HELD_SEARCHES);
    const searches = text.split('\n').filter((l) => l.startsWith('event: response.web_search_call.completed')).length;
    expect(searches).toBe(HELD_SEARCHES);
    expect(BigInt(WALLET) * 1000n - (await available(c))).toBe(B_TOKENS + BigInt(searches) * WEB_SEARCH_NANO);
    await expectSettledBooks(c);
  });

  it('messages: the tool gets max_uses, the vendor searches no more than held, and all it did is charged', async () => {
    const c = await walletOf(WALLET);
    const res = await post(c.as, '/v1/messages', messagesBody(), A_VERSION);
    const answer = (await res.json()) as any;
    expect(res.status, JSON.stringify(answer)).toBe(200);
    expect(lastBody('a', '/v1/messages').tools).toEqual([{ ...WEB_A, max_uses: HELD_SEARCHES }]);
    const searches = answer.usage.server_tool_use.web_search_requests;
    expect(searches).toBe(HELD_SEARCHES);
    expect(BigInt(WALLET) * 1000n - (await available(c))).toBe(A_TOKENS + BigInt(searches) * WEB_SEARCH_NANO);
    await expectSettledBooks(c);
  });

  it('messages: every uncapped server tool is capped, a client tool is left alone', async () => {
    const c = await walletOf(WALLET);
    const fn = { name: 'lookup', input_schema: { type: 'object', properties: {} } };
    const body = { ...messagesBody(), tools: [fn, WEB_A] };
    const res = await post(c.as, '/v1/messages', body, A_VERSION);
    expect(res.status).toBe(200);
    await res.json();
    expect(lastBody('a', '/v1/messages').tools).toEqual([fn, { ...WEB_A, max_uses: HELD_SEARCHES }]);
    await expectSettledBooks(c);
  });
});

describe("a client's own cap is kept and held", () => {
  it('messages max_uses 3: sent as is, three searches, charged for three', async () => {
    const c = await walletOf(WALLET);
    const res = await post(c.as, '/v1/messages', messagesBody({ ...WEB_A, max_uses: 3 }), A_VERSION);
    const answer = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(lastBody('a', '/v1/messages').tools).toEqual([{ ...WEB_A, max_uses: 3 }]);
    expect(answer.usage.server_tool_use.web_search_requests).toBe(3);
    expect(BigInt(WALLET) * 1000n - (await available(c))).toBe(A_TOKENS + 3n * WEB_SEARCH_NANO);
    await expectSettledBooks(c);
  });

  it('messages max_uses 20 on a wallet that cannot hold them: 402 before any vendor call', async () => {
    const c = await walletOf(WALLET);
    const sent = t.sim.received.length;
    const res = await post(c.as, '/v1/messages', messagesBody({ ...WEB_A, max_uses: 20 }), A_VERSION);
    expect(res.status).toBe(402);
    await res.text();
    expect(t.sim.received.length).toBe(sent);
    expect(await available(c)).toBe(BigInt(WALLET) * 1000n);
    await expectSettledBooks(c);
  });

  it('responses max_tool_calls 3: sent as is, three searches, charged for three', async () => {
    const c = await walletOf(WALLET);
    const res = await post(c.as, '/v1/responses', responsesBody({ max_tool_calls: 3 }));
    const answer = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(lastBody('b', '/v1/responses').max_tool_calls).toBe(3);
    expect(searchesOfResponse(answer)).toBe(3);
    expect(BigInt(WALLET) * 1000n - (await available(c))).toBe(B_TOKENS + 3n * WEB_SEARCH_NANO);
    await expectSettledBooks(c);
  });

  it('responses max_tool_calls 30 on a wallet that cannot hold them: 402 before any vendor call', async () => {
    const c = await walletOf(WALLET);
    const sent = t.sim.received.length;
    const res = await post(c.as, '/v1/responses', responsesBody({ max_tool_calls: 30 }));
    expect(res.status).toBe(402);
    await res.text();
    expect(t.sim.received.length).toBe(sent);
    expect(await available(c)).toBe(BigInt(WALLET) * 1000n);
    await expectSettledBooks(c);
  });

  it('responses max_tool_calls bounds the whole call, above the per-tool allowance: 14 searches held and done', async () => {
    // Two server tools under one cap of 14: the vendor may spend all 14 on the dearer tool (web search), so
    // 14 web searches are held ($0.14), not the per-tool allowance of 10 each ($0.10 + $0.025).
    const c = await walletOf(WALLET);
    // The file search without vector_store_ids, which are refused (no vector store is a wallet's): it is held all the same.
    const tools = [{ type: 'web_search' }, { type: 'file_search' }];
    const res = await post(c.as, '/v1/responses', responsesBody({ max_tool_calls: 14, tools }));
    const answer = (await res.json()) as any;
    expect(res.status, JSON.stringify(answer)).toBe(200);
    expect(searchesOfResponse(answer)).toBe(14);
    expect(BigInt(WALLET) * 1000n - (await available(c))).toBe(B_TOKENS + 14n * WEB_SEARCH_NANO);
    await expectSettledBooks(c);
  });
});

describe('max_tool_calls must be a positive whole number', () => {
  it.each([0, -1, 2.5, '3'])('max_tool_calls %j: 400 naming it, no vendor call, no charge', async (bad) => {
    const c = await walletOf(WALLET);
    const sent = t.sim.received.length;
    const res = await post(c.as, '/v1/responses', responsesBody({ max_tool_calls: bad }));
    const text = await res.text();
    expect(res.status, text).toBe(400);
    const err = JSON.parse(text);
    expect(err.error.type).toBe('invalid_request_error');
    expect(err.error.param).toBe('max_tool_calls');
    expect(err.error.message).toContain('max_tool_calls');
    expect(t.sim.received.length).toBe(sent);
    expect(await available(c)).toBe(BigInt(WALLET) * 1000n);
    await expectSettledBooks(c);
  });
});

describe('no other door carries a server tool to a vendor uncapped', () => {
  it('the chat door refuses a server tool for a vendor A model (only function tools are translated)', async () => {
    const c = await walletOf(WALLET);
    const sent = t.sim.received.length;
    const res = await post(c.as, '/v1/chat/completions', {
      model: 'a-small-4.5',
      messages: [{ role: 'user', content: 'hi [[sim:web_search=40]]' }],
      tools: [{ type: 'web_search' }],
    });
    expect(res.status).toBe(400);
    await res.text();
    expect(t.sim.received.length).toBe(sent);
    expect(await available(c)).toBe(BigInt(WALLET) * 1000n);
  });
});
