// Attack (a misbehaving vendor): a responses answer whose id, or one of its output items' ids, is longer than an
// index entry holds. The stored-answer row shares the charge's transaction, and PostgreSQL refused it with SQLSTATE
// 54000 ("index row size exceeds maximum"), which the charge writer took for a passing failure: it retried the same
// rows for a day while every wallet's calls were refused 503 behind the late charge. Measured before the fix on
// both databases: of 41 leased calls, 3 answered and never charged, and each later call of another wallet a 503.
// The same vendor reporting fractional token counts was charged them rounded up but recorded them rounded down, so
// the record did not price to its charge.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.ts';
import { useSuiteGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const randomId = (prefix: string, chars: number) => `${prefix}${randomBytes(chars).toString('base64url').slice(0, chars)}`;
/** The ids a tag in the request asks the stub to answer with. */
const IDS: Record<string, () => { id: string; item: string }> = {
  plain: () => ({ id: randomId('resp_', 24), item: randomId('msg_', 24) }),
  'long-response-id': () => ({ id: randomId('resp_', 3_000), item: randomId('msg_', 24) }),
  'long-item-id': () => ({ id: randomId('resp_', 24), item: randomId('msg_', 3_000) }),
};

/** Vendor B: responses answers with the tagged ids; chat answers with fractional usage. 100 in, 10 out otherwise. */
const stub = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => {
    body += c.toString();
  });
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    if (req.url?.endsWith('/v1/chat/completions')) {
      const usage = { prompt_tokens: 100.5, completion_tokens: 10.25, total_tokens: 110.75 };
      const message = { role: 'assistant', content: 'hi' };
      res.end(
        JSON.stringify({
          id: 'c1',
          object: 'chat.completion',
          model: 'b-5',
          choices: [{ index: 0, message, finish_reason: 'stop' }],
          usage,
        }),
      );
      return;
    }
    const { id, item } = (IDS[/\[\[ids:([a-z-]+)\]\]/.exec(body)?.[1] ?? 'plain'] ?? IDS.plain!)();
    const output = [
      {
        type: 'message',
        id: item,
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'hi', annotations: [] }],
      },
    ];
    res.end(
      JSON.stringify({
        id,
        object: 'response',
        status: 'completed',
        model: 'b-5',
        output,
        usage: { input_tokens: 100, output_tokens: 10, total_tokens: 110 },
      }),
    );
  });
});
await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
const stubUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
afterAll(() => new Promise<void>((r) => stub.close(() => r())));

interface Answer {
  status: number;
  charged: bigint;
  requestId: string;
  body: { id?: string; output?: { id: string }[] };
}

async function respond(t: TestGateway, key: string, ids: string, extra: Record<string, unknown> = {}): Promise<Answer> {
  const res = await fetch(`${t.url}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5', max_output_tokens: 100, input: `hello [[ids:${ids}]]`, ...extra }),
  });
  const body = (await res.json()) as Answer['body'];
  return {
    status: res.status,
    charged: BigInt(res.headers.get('x-service-charged-nano') ?? '0'),
    requestId: res.headers.get('x-request-id') ?? '',
    body,
  };
}

async function recordsOf(t: TestGateway, walletId: string) {
  const r = await t.gw.db.query<{ request_id: string; charged_nano: string; input_tokens: string; output_tokens: string }>(
    'SELECT request_id, charged_nano::text, input_tokens::text, output_tokens::text FROM usage_records WHERE wallet_id = $1',
    [walletId],
  );
  return new Map(r.rows.map((row) => [row.request_id, row]));
}

describe.each(['pglite', 'postgres'] as const)('a vendor answering ids too long to index [%s]', (kind) => {
  const suite = useSuiteGateway(kind, { credits: 10_000_000, env: { GATEWAY_VENDOR_B_URLS: stubUrl, GATEWAY_VENDOR_B_KEY: 'k' } });

  it('every answered call is charged once, the long ids are not stored, and other wallets are served', async () => {
    const t = suite.gateway();
    const wallet = await t.gw.ledger.createWallet({ credits: 10_000_000 });
    const { key: leased } = await t.gw.keys.createApiKey(wallet.id, { name: 'leased' });
    const { key: exact } = await t.gw.keys.createApiKey(wallet.id, { name: 'exact', dailyLimitCredits: 5_000_000 });
    const tags = ['plain', 'long-response-id', 'long-item-id'];
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => respond(t, i % 4 === 3 ? exact : leased, tags[i % 3]!)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    await t.gw.leases.flushed();

    const records = await recordsOf(t, wallet.id);
    for (const a of answers) expect(records.get(a.requestId)?.charged_nano).toBe(String(a.charged));
    expect(records.size).toBe(answers.length);
    const held = await t.gw.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM reservations WHERE wallet_id = $1 AND state = 'held' AND call_id NOT LIKE 'lease:%'`,
      [wallet.id],
    );
    expect(held.rows[0]!.n).toBe('0');
    await expectJournalAddsUp(t.gw.db, wallet.id);

    // Another wallet is served at once: no late charge holds the ledger.
    const started = Date.now();
    const other = await respond(t, t.apiKey, 'plain');
    expect(other.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1_500);

    // What was stored may be named again; what was too long to store is refused as never stored, in the door's shape.
    const plain = answers[0]!;
    expect((await respond(t, leased, 'plain', { previous_response_id: plain.body.id })).status).toBe(200);
    const longId = answers[1]!.body.id!;
    const refused = await respond(t, leased, 'plain', { previous_response_id: longId });
    expect(refused.status).toBe(404);
    const longItem = answers[2]!;
    const itemRefused = await respond(t, leased, 'plain', { input: [{ type: 'item_reference', id: longItem.body.output![0]!.id }] });
    expect(itemRefused.status).toBe(404);
    expect((await respond(t, leased, 'plain', { previous_response_id: longItem.body.id })).status).toBe(200);
  });

  it('fractional token counts are recorded as they were charged: rounded up, in the record and in its day', async () => {
    const t = suite.gateway();
    const wallet = await t.gw.ledger.createWallet({ credits: 1_000_000 });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'fractions' });
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', max_completion_tokens: 100, messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    await t.gw.leases.flushed();
    const charged = res.headers.get('x-service-charged-nano');
    const record = (await recordsOf(t, wallet.id)).get(res.headers.get('x-request-id')!);
    expect(record).toMatchObject({ input_tokens: '101', output_tokens: '11', charged_nano: charged });
    const day = await t.gw.db.query(
      'SELECT input_tokens::text AS i, output_tokens::text AS o, charged_nano::text AS c FROM usage_daily WHERE wallet_id = $1',
      [wallet.id],
    );
    expect(day.rows).toEqual([{ i: '101', o: '11', c: charged }]);
  });
});
