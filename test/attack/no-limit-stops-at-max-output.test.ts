// An attack on the hold of a body with no output limit: the gateway holds the model's max_output, as the real
// vendors stop there, so the simulated vendor must stop there too. A long answer asked for with no limit is charged
// no more than its hold and ends as a length-capped answer, on each door, streamed and not.
// Budget leases are off, so each call holds its own reservation: its row is the hold and what was charged on it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSse } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree;
let t: TestGateway;
beforeAll(async () => {
  tree = tempCatalogTree();
  setLeases(tree, false);
  t = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog } });
});
afterAll(async () => {
  await t?.close();
  tree?.remove();
});

const LONG = 'x [[sim:long=60000]]';
const MAX_OUTPUT = 32_768; // catalog/vendor-b.yaml b-4.1

/** How each door ends a length-capped answer, and the output tokens it reports. */
const ends = {
  chat: (body: any) => ({ end: body.choices[0].finish_reason, output: body.usage.completion_tokens }),
  chatStream: (events: any[]) => ({
    end: events.find((e) => e.data?.choices?.[0]?.finish_reason)?.data.choices[0].finish_reason,
    output: events.find((e) => e.data?.usage)?.data.usage.completion_tokens,
  }),
  responses: (body: any) => ({ end: `${body.status}/${body.incomplete_details?.reason}`, output: body.usage.output_tokens }),
  responsesStream: (events: any[]) =>
    ends.responses(events.find((e) => e.event === 'response.incomplete' || e.event === 'response.completed')?.data.response),
};

const cases = [
  ['chat', '/v1/chat/completions', { messages: [{ role: 'user', content: LONG }] }, 'length', ends.chat],
  [
    'chat streamed',
    '/v1/chat/completions',
    { stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: LONG }] },
    'length',
    ends.chatStream,
  ],
  ['responses', '/v1/responses', { input: LONG }, 'incomplete/max_output_tokens', ends.responses],
  ['responses streamed', '/v1/responses', { stream: true, input: LONG }, 'incomplete/max_output_tokens', ends.responsesStream],
] as const;

describe('b-4.1, [[sim:long=60000]] and no output limit', () => {
  it.each(cases)('%s: charged within its hold, the answer ends length-capped', async (_name, path, extra, end, read) => {
    const wallet = await t.gw.ledger.createWallet({ credits: 1_000_000_000 });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'no-limit' });
    const res = await fetch(`${t.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-4.1', ...extra }),
    });
    const text = await res.text();
    expect(res.status, text.slice(0, 300)).toBe(200);
    const rows = await t.gw.db.query<{ amount_nano: string; charged_nano: string | null; state: string }>(
      'SELECT amount_nano::text, charged_nano::text, state FROM reservations WHERE wallet_id = $1',
      [wallet.id],
    );
    expect(rows.rows.map((r) => r.state)).toEqual(['settled']);
    const hold = BigInt(rows.rows[0]!.amount_nano);
    const charged = BigInt(rows.rows[0]!.charged_nano ?? '0');
    expect(charged).toBeGreaterThan(0n);
    expect(charged, `charged ${charged} above the hold ${hold}`).toBeLessThanOrEqual(hold);
    const record = await t.gw.db.query<{ charged_nano: string; output_tokens: string }>(
      'SELECT charged_nano::text, output_tokens::text FROM usage_records WHERE wallet_id = $1',
      [wallet.id],
    );
    expect(record.rows.map((r) => [BigInt(r.charged_nano), Number(r.output_tokens)])).toEqual([[charged, MAX_OUTPUT]]);
    const seen = (read as (b: any) => { end: string; output: number })('stream' in extra ? parseSse(text) : JSON.parse(text));
    expect(seen.end).toBe(end);
    expect(seen.output).toBe(MAX_OUTPUT);
  });
});
