// Key groups (classes) over real HTTP on loopback: the doors, a group's monthly limit over the sum of its keys'
// use across two gateway processes on one PostgreSQL, a raised limit lifting the 429 at once, and another
// wallet's group being 404 and not joinable. The doors' checks also run on PGlite (one process).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;

async function call(t: TestGateway, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const chatBody = { model: 'b-6', max_completion_tokens: 400, messages: [{ role: 'user', content: 'go [[sim:long=600]]' }] };
const chat = (t: TestGateway, key: string) => call(t, 'POST', '/v1/chat/completions', key, chatBody);

/** A group and `n` keys in it, made through the doors of `t` with the wallet's management key. */
async function groupWithKeys(t: TestGateway, mgmt: string, monthly: number | null, n: number) {
  const g = await call(t, 'POST', '/v1/key-groups', mgmt, { name: '3학년 2반', monthly_limit_credits: monthly });
  expect(g.status).toBe(201);
  const made = await call(t, 'POST', '/v1/keys', mgmt, { count: n, name_prefix: 'student', group_id: g.body.id });
  expect(made.status).toBe(201);
  return { group: g.body, keys: made.body.data.map((k: { key: string }) => k.key) as string[] };
}

function doorChecks(get: () => { a: TestGateway; mgmt: string }) {
  it('creates, lists, gets, patches and deletes a group; bad input is 400 naming the field', async () => {
    const { a, mgmt } = get();
    const made = await call(a, 'POST', '/v1/key-groups', mgmt, { name: '1반', monthly_limit_credits: 100, daily_limit_credits: 10 });
    expect(made).toMatchObject({ status: 201, body: { object: 'key_group', name: '1반', monthly_limit_credits: 100, key_count: 0 } });
    const id = made.body.id as string;
    expect((await call(a, 'GET', '/v1/key-groups', mgmt)).body.data.map((g: { id: string }) => g.id)).toContain(id);
    expect((await call(a, 'PATCH', `/v1/key-groups/${id}`, mgmt, { daily_limit_credits: 20 })).body).toMatchObject({
      daily_limit_credits: 20,
    });
    for (const [body, param] of [
      [{}, 'name'],
      [{ name: 'x', monthly_limit_credits: -1 }, 'monthly_limit_credits'],
      [{ name: 'x', monthly_limit_credits: 5, daily_limit_credits: 6 }, 'daily_limit_credits'],
      [{ name: 'x', budget: 5 }, 'budget'],
    ] as const) {
      const r = await call(a, 'POST', '/v1/key-groups', mgmt, body);
      expect(r.status).toBe(400);
      expect(r.body.error.param).toBe(param);
    }
    const bad = await call(a, 'POST', '/v1/keys', mgmt, { group_id: 42 });
    expect(bad).toMatchObject({ status: 400, body: { error: { param: 'group_id' } } });
    const k = await call(a, 'POST', '/v1/keys', mgmt, { name: 'k', group_id: id });
    expect(k.body.data[0].group_id).toBe(id);
    const refused = await call(a, 'DELETE', `/v1/key-groups/${id}`, mgmt);
    expect(refused.status).toBe(409);
    await call(a, 'DELETE', `/v1/keys/${k.body.data[0].id}`, mgmt);
    expect((await call(a, 'DELETE', `/v1/key-groups/${id}`, mgmt)).status).toBe(200);
    expect((await call(a, 'GET', `/v1/key-groups/${id}`, mgmt)).status).toBe(404);
    const audit = await call(a, 'GET', '/v1/audit?action=key_group.changed', mgmt);
    expect(audit.body.data[0]).toMatchObject({ target_id: id, before: { daily_limit_credits: 10 }, after: { daily_limit_credits: 20 } });
  });

  it("another wallet's group is 404 and cannot be joined", async () => {
    const { a, mgmt } = get();
    const other = await a.gw.ledger.createWallet({ credits: 1_000 });
    const otherMgmt = (await a.gw.keys.createManagementKey(other.id)).key;
    const theirs = (await call(a, 'POST', '/v1/key-groups', otherMgmt, { name: 'theirs' })).body.id as string;
    for (const [method, body] of [['GET'], ['PATCH', { name: 'mine' }], ['DELETE']] as const) {
      expect((await call(a, method, `/v1/key-groups/${theirs}`, mgmt, body)).status).toBe(404);
    }
    expect((await call(a, 'POST', '/v1/keys', mgmt, { group_id: theirs })).status).toBe(404);
    const mine = (await call(a, 'POST', '/v1/keys', mgmt, { name: 'mine' })).body.data[0];
    expect((await call(a, 'PATCH', `/v1/keys/${mine.id}`, mgmt, { group_id: theirs })).status).toBe(404);
    expect((await call(a, 'GET', `/v1/key-groups/${theirs}`, otherMgmt)).body).toMatchObject({ name: 'theirs', key_count: 0 });
  });

  it("a group's daily limit blocks its keys once their use today has reached it; raising it lifts it at once", async () => {
    const { a, mgmt } = get();
    const g = await call(a, 'POST', '/v1/key-groups', mgmt, { name: 'daily', daily_limit_credits: 1 });
    const made = await call(a, 'POST', '/v1/keys', mgmt, { count: 2, name_prefix: 'd', group_id: g.body.id });
    const [k1, k2] = made.body.data.map((k: { key: string }) => k.key);
    expect((await chat(a, k1)).status).toBe(200);
    const refused = await chat(a, k2);
    expect(refused).toMatchObject({ status: 429, body: { error: { type: 'key_limit_exceeded' } } });
    await call(a, 'PATCH', `/v1/key-groups/${g.body.id}`, mgmt, { daily_limit_credits: 10_000_000 });
    expect((await chat(a, k2)).status).toBe(200);
  });

  it('GET /v1/key names the group and shows its limits and use', async () => {
    const { a, mgmt } = get();
    const { group, keys } = await groupWithKeys(a, mgmt, 1_000_000, 2);
    expect((await chat(a, keys[0]!)).status).toBe(200);
    const status = await call(a, 'GET', '/v1/key', keys[1]!);
    expect(status.body.group).toMatchObject({ id: group.id, name: group.name, month: { limit_credits: 1_000_000 } });
    expect(status.body.group.month.used_credits).toBeGreaterThan(0);
    expect(status.body.month.used_credits).toBe(0);
  });
}

describe('key groups [pglite, one process]', () => {
  let a: TestGateway;
  let mgmt: string;
  beforeAll(async () => {
    a = await startTestGateway();
    mgmt = (await a.gw.keys.createManagementKey(a.walletId)).key;
  }, 60_000);
  afterAll(async () => a?.close());
  doorChecks(() => ({ a, mgmt }));
});

describe.skipIf(!canRun)('key groups across two processes [postgres]', () => {
  let pg: TestPostgres;
  let a: TestGateway;
  let b: TestGateway;
  let mgmt: string;
  beforeAll(async () => {
    pg = await openTestPostgres({ migrate: false });
    a = await startTestGateway({ credits: 100_000_000, env: { DATABASE_URL: pg.url } });
    b = await startTestGateway({ credits: 1, env: { DATABASE_URL: pg.url } });
    mgmt = (await a.gw.keys.createManagementKey(a.walletId)).key;
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await pg?.cleanup();
  });
  doorChecks(() => ({ a, mgmt }));

  it("N calls fit a group's month exactly across two processes; the rest are 429; a raised limit lifts it at once", async () => {
    // What one call may use, from the 429 of a group with room for its shortest answer only (with none at all,
    // the 429 says that not even the shortest answer fits).
    const probe = await groupWithKeys(a, mgmt, 1_000, 1);
    const first = await chat(a, probe.keys[0]!);
    expect(first.status).toBe(429);
    const most = Number(/may use up to (\d+) credits/.exec(first.body.error.message)![1]);
    const N = 5;
    const { group, keys } = await groupWithKeys(a, mgmt, N * most, 4);
    for (const s of [a, b]) s.sim.inject('b0', { kind: 'delay', ms: 1_500, times: 20 });
    const res = await Promise.all(Array.from({ length: 16 }, (_, i) => chat(i % 2 ? b : a, keys[i % keys.length]!)));
    const statuses = res.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(N);
    expect(statuses.filter((s) => s === 429)).toHaveLength(16 - N);
    for (const r of res.filter((r) => r.status === 429)) expect(r.body.error.type).toBe('key_limit_exceeded');
    const used = await pg.db.query<{ s: string }>(
      `SELECT coalesce(sum(d.charged_nano), 0)::text AS s FROM usage_daily d JOIN api_keys k ON k.id = d.key_id
        WHERE k.group_id = $1`,
      [group.id],
    );
    expect(BigInt(used.rows[0]!.s)).toBeLessThanOrEqual(BigInt(N * most) * 1000n);
    expect((await chat(b, keys[1]!)).status).toBe(429);
    const raised = await call(a, 'PATCH', `/v1/key-groups/${group.id}`, mgmt, { monthly_limit_credits: (N + 1) * most * 10 });
    expect(raised.status).toBe(200);
    expect((await chat(b, keys[1]!)).status).toBe(200);
  }, 60_000);
});
