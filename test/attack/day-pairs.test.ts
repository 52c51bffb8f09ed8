// Two calls sent together on a key (or class) with a daily limit, its cache warm: both reached planning side by side,
// each was fitted to the whole day before either held it, and both were admitted full (an attack saw 39,931 credits
// used of a 20,000-credit day in 2 to 4 rounds of 8, on PostgreSQL). Now a key or class with a daily limit plans and
// holds its calls one at a time on a process: the second is fitted to what the first leaves, or is the day's last
// call, held for its shortest answer (interface.md, Authentication 8).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const DAY = 20_000;
const body = JSON.stringify({ model: 'b-4.1-mini', messages: [{ role: 'user', content: 'hello [[sim:long=20000]]' }] });

const kinds = [
  { name: 'pglite', postgres: false },
  ...(postgresAvailability.ok || REQUIRE_POSTGRES ? [{ name: 'postgres', postgres: true }] : []),
];

for (const { name, postgres } of kinds)
  describe(`two calls sent together on a key with a daily limit [${name}]`, () => {
    let t: TestGateway;
    let pg: TestPostgres | undefined;
    beforeAll(async () => {
      pg = postgres ? await openTestPostgres() : undefined;
      t = await startTestGateway(pg ? { env: { DATABASE_URL: pg.url } } : {});
    });
    afterAll(async () => {
      await t?.close();
      await pg?.cleanup();
    });

    const call = async (key: string, extra: Record<string, unknown> = {}) => {
      const r = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: Object.keys(extra).length ? JSON.stringify({ ...JSON.parse(body), ...extra }) : body,
      });
      await r.text();
      return r;
    };

    async function dailyKey(groupDaily: boolean): Promise<string> {
      const wallet = await t.gw.ledger.createWallet({ credits: 1_000_000 });
      if (!groupDaily) return (await t.gw.keys.createApiKey(wallet.id, { name: 'day', dailyLimitCredits: DAY })).key;
      const { key: mk } = await t.gw.keys.createManagementKey(wallet.id, 'mgmt');
      const auth = { authorization: `Bearer ${mk}`, 'content-type': 'application/json' };
      const post = async (path: string, b: unknown) =>
        (await fetch(`${t.url}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(b) })).json();
      const group = await post('/v1/key-groups', { name: '3-1', daily_limit_credits: DAY });
      return (await post('/v1/keys', { name: 'pupil', group_id: group.id })).data[0].key;
    }

    it('the second is fitted to what the first leaves, round after round, for a key and for a class', async () => {
      const wallet = await t.gw.ledger.createWallet({ credits: 1_000_000 });
      const { key: open } = await t.gw.keys.createApiKey(wallet.id, { name: 'open' });
      const shortest = Math.ceil(Number((await call(open, { max_completion_tokens: 1 })).headers.get('x-service-charged-nano')) / 1000);
      for (const groupDaily of [false, true]) {
        for (let round = 0; round < 8; round++) {
          const key = await dailyKey(groupDaily);
          await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } }); // the key's cache warm
          await Promise.all([call(key), call(key)]);
          const status = await (await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).json();
          const used = groupDaily ? status.group.day.used_credits : status.day.used_credits;
          expect(used, `round ${round}${groupDaily ? ', class' : ''}`).toBeLessThan(DAY + shortest);
        }
      }
    });
  });
