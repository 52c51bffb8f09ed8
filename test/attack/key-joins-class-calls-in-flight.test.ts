// Attack: a key joins a class (key group) with a monthly limit, or gets a monthly limit of its own, while its calls
// are at the vendor on a lease. A key's new limit counts those calls as held from the change on, so the calls
// admitted after it cannot take the key past it; a class does not take the key in until they end. Before, a class
// counted only holds that carry a member's key id: the joining key's calls on the wallet's lease were invisible
// (eight more calls admitted, the class at 168,770 of 100,000 credits).
import { describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';

const LIMIT = 100_000;
const DELAY_MS = 2_500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(['pglite', 'postgres'] as const)('a key that joins a class or gets a limit with calls in flight [%s]', (kind) => {
  const gateway = useLeasedGateway(kind, 50_000_000);
  let mk = '';

  async function manage(t: TestGateway, method: string, path: string, body?: unknown) {
    if (!mk) mk = (await t.gw.keys.createManagementKey(t.walletId, 'teacher')).key;
    const res = await fetch(`${t.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${mk}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  }
  const newKey = async (t: TestGateway, extra: Record<string, unknown>) => {
    const created = (await manage(t, 'POST', '/v1/keys', { name: 'student', ...extra })) as { data: { key: string; id: string }[] };
    return created.data[0]!;
  };
  /** A call that holds about 12,600 credits; with `costly`, it also costs about that much. */
  const chat = (t: TestGateway, key: string, i: number, costly = true) =>
    post(
      t,
      '/v1/chat/completions',
      {
        model: 'b-6',
        max_completion_tokens: 400,
        messages: [{ role: 'user', content: `question ${i}${costly ? ' [[sim:usage input=20 output=400]]' : ''}` }],
      },
      { authorization: `Bearer ${key}` },
    ).then(async (r) => (await r.text(), r.status));

  /** Six calls of `key` slow at the vendor, and `change` made as soon as they are admitted; resolves with them. */
  async function changedWithSixInFlight(t: TestGateway, key: string, delayMs: number, costly: boolean, change: () => Promise<unknown>) {
    t.sim.inject('b0', { kind: 'delay', ms: delayMs, times: 6 });
    const admitted = t.gw.leases.stats().admitted;
    const six = Promise.all(Array.from({ length: 6 }, (_, i) => chat(t, key, i, costly)));
    // What they hold is not yet told (every 250 ms) unless the change waits for it.
    for (let i = 0; i < 200 && t.gw.leases.stats().admitted < admitted + 6; i++) await sleep(5);
    await change();
    return six;
  }

  /** Six slow calls of `mover`, then `change` while they run, then eight calls of `after`; every call ends. */
  async function race(t: TestGateway, mover: string, change: () => Promise<unknown>, after: string) {
    const six = await changedWithSixInFlight(t, mover, DELAY_MS, true, change);
    const second = await Promise.all(Array.from({ length: 8 }, (_, i) => chat(t, after, 10 + i)));
    expect(await six).toEqual([200, 200, 200, 200, 200, 200]);
    await t.gw.leases.flushed();
    return second;
  }

  /** A PATCH of the key's class, as its answer came: status and body. */
  async function moveTo(t: TestGateway, keyId: string, groupId: string) {
    const res = await fetch(`${t.url}/v1/keys/${keyId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${mk}`, 'content-type': 'application/json' },
      body: JSON.stringify({ group_id: groupId }),
    });
    return { status: res.status, body: (await res.json()) as { error?: { param?: string; message?: string } } };
  }

  // A key's calls in flight were admitted under no class's limit, and its use moves with it (keys/key-moves.ts):
  // before, the key joined and the class counted its calls as held from then on (the class at 168,770 of 100,000
  // once, when it did not); now the move waits until they end, and then, the key having spent, for next month.
  it.each([
    ["on the wallet's lease", {}],
    ['on its own allowance', { monthly_limit_credits: 1_000_000 }],
  ])('a key with calls in flight %s does not join a class with a limit', async (_, extra) => {
    const t = gateway();
    const cls = (await manage(t, 'POST', '/v1/key-groups', {
      name: `class ${Object.keys(extra).length}`,
      monthly_limit_credits: LIMIT,
    })) as { id: string };
    const mover = await newKey(t, extra);
    let during: Awaited<ReturnType<typeof moveTo>> | undefined;
    const six = await changedWithSixInFlight(t, mover.key, DELAY_MS, true, async () => {
      during = await moveTo(t, mover.id, cls.id);
    });
    expect(during?.status).toBe(400);
    expect(during?.body.error).toMatchObject({ param: 'group_id', message: expect.stringMatching(/calls in progress/) });
    expect(await six).toEqual([200, 200, 200, 200, 200, 200]);
    await t.gw.leases.flushed();
    const after = await moveTo(t, mover.id, cls.id);
    expect(after.status).toBe(400);
    expect(after.body.error?.message).toMatch(/spent this month/);
    expect(((await manage(t, 'GET', `/v1/keys/${mover.id}`)) as { group_id: string | null }).group_id).toBeNull();
    expect((await manage(t, 'GET', `/v1/key-groups/${cls.id}`)).month_used_credits).toBe(0);
  });

  /** Six slow calls of `key` (each holds far more than it costs), `change` while they run, then one call of `next`. */
  async function afterTheyEnd(t: TestGateway, key: string, change: () => Promise<unknown>, next: string) {
    expect(await changedWithSixInFlight(t, key, DELAY_MS / 2, false, change)).toEqual([200, 200, 200, 200, 200, 200]);
    return chat(t, next, 99); // at once: what the six held must be gone as they are charged
  }

  it("refuses no call that fits once the calls in flight at a class's new limit end", async () => {
    const t = gateway();
    const cls = await manage(t, 'POST', '/v1/key-groups', { name: 'class 3' });
    const [k1, k2] = [await newKey(t, { group_id: cls.id }), await newKey(t, { group_id: cls.id })];
    const limit = () => manage(t, 'PATCH', `/v1/key-groups/${cls.id}`, { monthly_limit_credits: 40_000 });
    expect(await afterTheyEnd(t, k1.key, limit, k2.key)).toBe(200);
  });

  it("refuses no call that fits once the calls in flight at a key's new limit end", async () => {
    const t = gateway();
    const k = await newKey(t, {});
    const limit = () => manage(t, 'PATCH', `/v1/keys/${k.id}`, { monthly_limit_credits: 40_000 });
    expect(await afterTheyEnd(t, k.key, limit, k.key)).toBe(200);
  });

  it("counts a key's calls in flight on the limit it is given meanwhile", async () => {
    const t = gateway();
    const k2 = await newKey(t, {});
    const statuses = await race(t, k2.key, () => manage(t, 'PATCH', `/v1/keys/${k2.id}`, { monthly_limit_credits: LIMIT }), k2.key);
    const used = (await manage(t, 'GET', `/v1/keys/${k2.id}`)).month_used_credits as number;
    expect(used).toBeLessThanOrEqual(LIMIT);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
  });
});
