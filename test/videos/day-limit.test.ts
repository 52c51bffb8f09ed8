// A video job counts on its key's and its class's daily limits while it runs, not only once it is charged: a job
// takes minutes, and an attack started ten jobs one after another on a key with a 100,000-credit day, each holding
// 700,000, and all ten were admitted (37.5 times the day by the time they were charged). The day's first call
// still passes whatever it holds (interface.md, Authentication 8); the next finds the day held and gets 429.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

/** A job that never ends in the simulator: its hold stays while the test runs. */
const createJob = async (key: string) => {
  const r = await fetch(`${t.url}/v1/videos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'video-d-2', prompt: 'a storm [[sim:never]]', seconds: '5', size: '1280x720' }),
  });
  return { status: r.status, body: (await r.json()) as { error?: { type: string } } };
};

async function groupKeys(dailyLimitCredits: number): Promise<[string, string]> {
  const wallet = await t.gw.ledger.createWallet({ credits: 100_000_000 });
  const { key: mk } = await t.gw.keys.createManagementKey(wallet.id, 'mgmt');
  const auth = { authorization: `Bearer ${mk}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) =>
    (await fetch(`${t.url}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) })).json();
  const group = await post('/v1/key-groups', { name: '3-1', daily_limit_credits: dailyLimitCredits });
  const made = await post('/v1/keys', { count: 2, name: 'teacher', audience: 'teacher', group_id: group.id });
  return [made.data[0].key, made.data[1].key];
}

it("a running job holds the key's day: the next job and the next chat call are refused (429)", async () => {
  const wallet = await t.gw.ledger.createWallet({ credits: 100_000_000 });
  const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'teacher', dailyLimitCredits: 100_000 });
  expect((await createJob(key)).status).toBe(200);
  const second = await createJob(key);
  expect(second.status, JSON.stringify(second.body)).toBe(429);
  expect(second.body.error?.type).toBe('key_limit_exceeded');
  const chat = await fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5-mini', max_completion_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(chat.status).toBe(429);
  expect((await t.gw.ledger.balance(wallet.id)).reservedNano).toBe(700_000_000n); // the one job's hold, nothing more
});

it("a running job of one key holds its class's day for the class's other keys", async () => {
  const [first, second] = await groupKeys(100_000);
  expect((await createJob(first)).status).toBe(200);
  const refused = await createJob(second);
  expect(refused.status, JSON.stringify(refused.body)).toBe(429);
  expect(refused.body.error?.type).toBe('key_limit_exceeded');
});

it('a key without a daily limit starts jobs as its credits allow', async () => {
  const wallet = await t.gw.ledger.createWallet({ credits: 100_000_000 });
  const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'open' });
  expect((await createJob(key)).status).toBe(200);
  expect((await createJob(key)).status).toBe(200);
});
