// An attack on the estimate of a call whose usage the vendor left out (a stream it broke, an answer without a
// usage figure): the estimate errs above, and once it erred past the hold a key or class one credit short of the
// charge was admitted and ended past its monthly limit. Input: a schema of 20,000 single-digit items is held at
// ~2 bytes an item, and was estimated at ~3 tokens an item (the digit, a newline, one for the item). Output: a
// stream cut after "word123 word124 …" was counted with the per-script bound (~1.7 tokens per 4 characters), past
// the max_tokens sent and held. The estimate is now held to the bounds the hold was sized for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fault } from '../../simulator/faults.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let t: TestGateway;
let tree: TempTree;
/** A gateway with budget leases on (as shipped) or off (each call holds its own reservation, which a test can read). */
async function startGateway(leases: boolean) {
  tree = tempCatalogTree();
  setLeases(tree, leases);
  t = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog } });
}
async function stopGateway() {
  await t?.close();
  tree?.remove();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function keyWith(monthlyLimitCredits: number) {
  const wallet = await t.gw.ledger.createWallet({ credits: 1_000_000_000 });
  const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'probe', monthlyLimitCredits });
  return { key, walletId: wallet.id };
}
async function manage(path: string, body: unknown, mk: string) {
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${mk}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await res.json()) as Record<string, any>;
}
/** A key of a new class (key group) whose monthly limit is `limit`, and a reader of the class's month. */
async function classKey(limit: number) {
  const wallet = await t.gw.ledger.createWallet({ credits: 1_000_000_000 });
  const mk = (await t.gw.keys.createManagementKey(wallet.id)).key;
  const group = await manage('/v1/key-groups', { name: 'class', monthly_limit_credits: limit }, mk);
  const made = await manage('/v1/keys', { count: 1, name_prefix: 's', group_id: group.id }, mk);
  const used = async () => {
    const res = await fetch(`${t.url}/v1/key-groups/${group.id}`, { headers: { authorization: `Bearer ${mk}` } });
    return ((await res.json()) as any).month_used_credits as number;
  };
  return { key: made.data[0].key as string, used };
}
/** One call with `fault` queued on `route`, read to its end (the charge lands a moment after). */
async function send(key: string, route: string, path: string, body: unknown, fault: Fault) {
  t.sim.inject(route, fault);
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  await res.text();
  t.sim.clearFaults(); // a refused call leaves its fault queued
  await sleep(300);
  return res.status;
}
async function monthUsed(key: string): Promise<number> {
  const res = await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } });
  return ((await res.json()) as any).month.used_credits;
}

const zeros = { type: 'object', properties: { x: { enum: Array(20_000).fill(0) } } };
const chatTool = [{ type: 'function', function: { name: 'f', parameters: zeros } }];
const ask = [{ role: 'user', content: 'x' }];
const long = [{ role: 'user', content: 'x [[sim:long=5000]]' }];
const cut: Fault = { kind: 'stream-error', afterEvents: 1 };

const cases: [string, string, string, Record<string, unknown>, Fault][] = [
  [
    'chat b-4.1: digits schema, stream error',
    'b0',
    '/v1/chat/completions',
    { model: 'b-4.1', max_tokens: 1, stream: true, tools: chatTool, messages: ask },
    cut,
  ],
  [
    'chat b-4.1: digits schema, stream reset',
    'b0',
    '/v1/chat/completions',
    { model: 'b-4.1', max_tokens: 1, stream: true, tools: chatTool, messages: ask },
    { kind: 'reset-mid-stream', afterEvents: 1 },
  ],
  [
    'chat b-4.1: digits schema, no usage',
    'b0',
    '/v1/chat/completions',
    { model: 'b-4.1', max_tokens: 1, tools: chatTool, messages: ask },
    { kind: 'usage-missing' },
  ],
  [
    'messages a-high-4.7: digits schema, no usage',
    'a0',
    '/v1/messages',
    { model: 'a-high-4.7', max_tokens: 1, tools: [{ name: 'f', input_schema: zeros }], messages: ask },
    { kind: 'usage-missing' },
  ],
  [
    'chat to a-high-4.7: digits schema, stream without usage',
    'a0',
    '/v1/chat/completions',
    { model: 'a-high-4.7', max_tokens: 1, stream: true, tools: chatTool, messages: ask },
    { kind: 'usage-missing' },
  ],
  [
    'responses b-5-mini: digits schema, no usage',
    'b0',
    '/v1/responses',
    { model: 'b-5-mini', max_output_tokens: 16, tools: [{ type: 'function', name: 'f', parameters: zeros }], input: 'x' },
    { kind: 'usage-missing' },
  ],
  [
    'chat c-flash-2.5: digits schema, no usage',
    'c0',
    '/v1/chat/completions',
    { model: 'c-flash-2.5', max_tokens: 1, tools: chatTool, messages: ask },
    { kind: 'usage-missing' },
  ],
  [
    'messages a-high-4.7: long answer, stream error after 1000 events',
    'a0',
    '/v1/messages',
    { model: 'a-high-4.7', max_tokens: 2000, stream: true, messages: long },
    { kind: 'stream-error', afterEvents: 1000 },
  ],
  [
    'chat c-flash-2.5: long answer, stream error after 1000 events',
    'c0',
    '/v1/chat/completions',
    { model: 'c-flash-2.5', max_tokens: 2000, stream: true, messages: long },
    { kind: 'stream-error', afterEvents: 1000 },
  ],
];

describe('with leases off, each call held on its own: the estimated charge is within the hold', () => {
  beforeAll(() => startGateway(false));
  afterAll(stopGateway);

  it.each(cases)('%s', async (_name, route, path, body, fault) => {
    const { key, walletId } = await keyWith(900_000_000);
    expect(await send(key, route, path, body, fault)).toBe(200);
    const row = await t.gw.db.query<{ amount_nano: string; charged_nano: string }>(
      'SELECT amount_nano::text, charged_nano::text FROM reservations WHERE wallet_id = $1',
      [walletId],
    );
    expect(row.rows).toHaveLength(1);
    const [hold, charged] = [BigInt(row.rows[0]!.amount_nano), BigInt(row.rows[0]!.charged_nano)];
    expect(charged).toBeGreaterThan(0n);
    expect(charged).toBeLessThanOrEqual(hold);
  });
});

describe('with leases on (as shipped): a key or class one credit short of the estimated charge ends within its limit', () => {
  beforeAll(() => startGateway(true));
  afterAll(stopGateway);

  it.each(cases)('%s', async (_name, route, path, body, fault) => {
    const roomy = await keyWith(900_000_000);
    expect(await send(roomy.key, route, path, body, fault)).toBe(200);
    const charge = await monthUsed(roomy.key);
    // Refused, lowered, or charged within the limit.
    const short = await keyWith(charge - 1);
    await send(short.key, route, path, body, fault);
    expect(await monthUsed(short.key)).toBeLessThanOrEqual(charge - 1);
    const member = await classKey(charge - 1);
    await send(member.key, route, path, body, fault);
    expect(await member.used()).toBeLessThanOrEqual(charge - 1);
  });
});
