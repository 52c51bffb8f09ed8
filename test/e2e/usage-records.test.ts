// Every settled call leaves a usage record, written by the settle's own transaction: GET /v1/generations/{id}
// (the request id returned to the client) shows it to any key of the wallet, and a non-streaming answer
// carries its charge in x-service-charged-nano. The records add up to what the wallet was charged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneUsageRecords } from '../../engine/usage/retention.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { A_VERSION, nano, PRICES, post, sleep } from './e2e.ts';

let t: TestGateway;
let startBalance: bigint;
beforeAll(async () => {
  t = await startTestGateway();
  startBalance = await t.balance();
});
afterAll(() => t?.close());

const generation = (id: string, key = t.apiKey, header: 'bearer' | 'x-api-key' = 'bearer') =>
  fetch(`${t.url}/v1/generations/${encodeURIComponent(id)}`, {
    headers: header === 'bearer' ? { authorization: `Bearer ${key}` } : { 'x-api-key': key },
  });

async function settledCall(body: object, headers: Record<string, string> = {}, path = '/v1/chat/completions') {
  const before = await t.balance();
  const res = await post(t, path, body, headers);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  for (let i = 0; i < 100 && (await t.held()) !== 0n; i++) await sleep(20);
  return { res, text, charged: before - (await t.balance()), id: res.headers.get('x-request-id')! };
}

describe('usage records', () => {
  it('a non-streaming call: its charge in the header, its record by request id with every token kind', async () => {
    const { res, charged, id } = await settledCall({
      model: 'b-5',
      messages: [{ role: 'user', content: 'hello [[sim:usage input=1000 cache_read=200 output=300 reasoning=120]]' }],
      max_completion_tokens: 2000,
    });
    const expected = nano(1000, PRICES['b-5'].input) + nano(200, PRICES['b-5'].cache_read) + nano(300, PRICES['b-5'].output);
    expect(charged).toBe(expected);
    expect(res.headers.get('x-service-charged-nano')).toBe(String(charged));

    const g = await generation(id);
    expect(g.status).toBe(200);
    const record = await g.json();
    expect(record).toMatchObject({
      id,
      object: 'generation',
      door: 'chat',
      model: 'b-5',
      vendor: 'b',
      route: 'b0',
      fallback_depth: 0,
      tokens: { input: 1000, cache_read: 200, cache_write: 0, output: 300, reasoning: 120 },
      server_tool_calls: 0,
      charged_nano: String(charged),
    });
    expect(record.duration_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(record.created_at)).not.toBeNaN();
  });

  it('a streamed call is recorded with its charge once the stream is settled', async () => {
    const { charged, id } = await settledCall({
      model: 'b-5',
      stream: true,
      messages: [{ role: 'user', content: 'hello [[sim:usage input=400 output=50]]' }],
      max_completion_tokens: 500,
    });
    const record = await (await generation(id)).json();
    expect(record.charged_nano).toBe(String(charged));
    expect(record.tokens).toMatchObject({ input: 400, output: 50 });
  });

  it('a fallback is recorded with the route that answered and its depth', async () => {
    t.sim.inject('a0', { kind: 'status', status: 529 });
    const { id } = await settledCall(
      { model: 'a-top-5.5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] },
      A_VERSION,
      '/v1/messages',
    );
    const record = await (await generation(id)).json();
    expect(record).toMatchObject({ door: 'messages', vendor: 'a', route: 'a1', fallback_depth: 1 });
  });

  it('answers any key of the wallet (bearer or x-api-key), and 404 to another wallet or an unknown id', async () => {
    const { id } = await settledCall({ model: 'b-5', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 50 });
    const { key: sibling } = await t.gw.keys.createApiKey(t.walletId, { name: 'sibling' });
    expect((await generation(id, sibling, 'x-api-key')).status).toBe(200);

    const other = await t.gw.ledger.createWallet({ credits: 1000 });
    const { key: stranger } = await t.gw.keys.createApiKey(other.id, { name: 'stranger' });
    const refused = await generation(id, stranger);
    expect(refused.status).toBe(404);
    expect((await refused.json()).error.type).toBe('not_found_error');
    expect((await generation('no-such-id')).status).toBe(404);
    expect((await generation(id, 'sk-svc-not-a-key')).status).toBe(401);
  });

  it('a request id the client reuses finds its newest call', async () => {
    const headers = { 'x-request-id': 'client-chosen-id-1' };
    await settledCall(
      { model: 'b-5', messages: [{ role: 'user', content: 'one [[sim:usage input=10 output=10]]' }], max_completion_tokens: 50 },
      headers,
    );
    await settledCall(
      { model: 'b-5', messages: [{ role: 'user', content: 'two [[sim:usage input=20 output=20]]' }], max_completion_tokens: 50 },
      headers,
    );
    const record = await (await generation('client-chosen-id-1')).json();
    expect(record.tokens).toMatchObject({ input: 20, output: 20 });
  });

  it('the records add up to everything the wallet was charged', async () => {
    const sum = await t.gw.db.query<{ s: string }>(
      `SELECT coalesce(sum(charged_nano), 0)::text AS s FROM usage_records WHERE wallet_id = $1`,
      [t.walletId],
    );
    expect(BigInt(sum.rows[0]!.s)).toBe(startBalance - (await t.balance()));
  });

  it('records older than the kept period are pruned', async () => {
    const { id } = await settledCall({ model: 'b-5', messages: [{ role: 'user', content: 'old' }], max_completion_tokens: 50 });
    await t.gw.db.query(`UPDATE usage_records SET at = at - interval '91 days' WHERE request_id = $1`, [id]);
    const removed = await pruneUsageRecords(t.gw.db, new Date(Date.now() - 90 * 86_400_000));
    expect(removed.deletedRows).toBe(1);
    expect((await generation(id)).status).toBe(404);
  });
});

describe('reasoning counted apart from completion_tokens (vendor D)', () => {
  // d-3-mini: $0.3 / $0.5 per 1M (catalog/vendor-d.yaml). The simulator answers as vendor D's API does:
  // completion_tokens 100 (the text), reasoning_tokens 200, total_tokens 1,300 over a prompt of 1,000.
  it('charges the reasoning as output, and records it', async () => {
    const { charged, id } = await settledCall({
      model: 'd-3-mini',
      messages: [{ role: 'user', content: 'think [[sim:usage input=1000 output=300 reasoning=200]]' }],
      max_tokens: 2000,
    });
    expect(charged).toBe(nano(1000, 0.3) + nano(300, 0.5));
    const record = await (await generation(id)).json();
    expect(record.tokens).toMatchObject({ input: 1000, output: 300, reasoning: 200 });
  });
});
