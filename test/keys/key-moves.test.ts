// A key's class change, from every door an owner uses. Found by an attack on the class limits: a key moved out of
// a class took its month's use along, so the class it left spent again what it had already spent (35,288 credits
// against a limit of 20,000), and the class it joined counted use none of its keys made. Now a key that has spent
// this month, or has calls in progress, moves only between classes without limits (keys/key-moves.ts); the refusal
// says what to do instead, in the API's words on the door and in the owner's language on the dashboard.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn } from '../dashboard/owner-client.ts';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
let mgmt = '';

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${mgmt}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const group = async (name: string, limits: Record<string, number> = {}) =>
  (await call('POST', '/v1/key-groups', { name, ...limits })).body.id as string;

/** A key in `groupId` (null: none); `spend`: after one call it has spent this month. */
async function key(groupId: string | null, spend: boolean): Promise<string> {
  const made = (await call('POST', '/v1/keys', { name: 'student', group_id: groupId })).body.data[0];
  if (spend) {
    const res = await post(
      t,
      '/v1/chat/completions',
      { model: 'b-5', messages: [{ role: 'user', content: 'hi' }] },
      {
        authorization: `Bearer ${made.key}`,
      },
    );
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await t.gw.leases.flushed();
  }
  return made.id;
}

const moveTo = (keyId: string, groupId: string | null) => call('PATCH', `/v1/keys/${keyId}`, { group_id: groupId });
const groupOfKey = async (keyId: string) => (await call('GET', `/v1/keys/${keyId}`)).body.group_id;
const monthUsed = async (groupId: string) => (await call('GET', `/v1/key-groups/${groupId}`)).body.month_used_credits as number;

beforeAll(async () => {
  t = await startTestGateway();
  mgmt = (await t.gw.keys.createManagementKey(t.walletId)).key;
});
afterAll(() => t?.close());

describe("a key's class change", () => {
  it('a key that has spent this month stays in a class with a limit, and its use stays counted there', async () => {
    const [a, b] = [await group('1반', { monthly_limit_credits: 20_000_000 }), await group('2반', { monthly_limit_credits: 20_000_000 })];
    const spent = await key(a, true);
    const used = await monthUsed(a);
    expect(used).toBeGreaterThan(0);
    for (const to of [b, null]) {
      const refused = await moveTo(spent, to);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', param: 'group_id' });
      expect(refused.body.error.message).toMatch(/spent this month.*close it and make a new key in the other class/);
    }
    expect(await groupOfKey(spent)).toBe(a);
    expect(await monthUsed(a)).toBe(used);
    expect(await monthUsed(b)).toBe(0);
  });

  it('nor does it join a class with a limit, from none or from a class without one', async () => {
    const limited = await group('3반', { daily_limit_credits: 5_000_000 });
    const open = await group('4반');
    for (const from of [null, open]) {
      const spent = await key(from, true);
      expect((await moveTo(spent, limited)).status).toBe(400);
      expect(await groupOfKey(spent)).toBe(from);
    }
  });

  it('a key that has not spent moves freely, and a spent key moves between classes without limits', async () => {
    const [a, b] = [await group('5반', { monthly_limit_credits: 1_000 }), await group('6반', { monthly_limit_credits: 1_000 })];
    const fresh = await key(a, false);
    expect((await moveTo(fresh, b)).status).toBe(200);
    expect(await groupOfKey(fresh)).toBe(b);
    const [c, d] = [await group('7반'), await group('8반')];
    const spent = await key(c, true);
    expect((await moveTo(spent, d)).status).toBe(200);
    expect((await moveTo(spent, null)).status).toBe(200);
    expect(await groupOfKey(spent)).toBeNull();
  });

  it('on the dashboard the owner is told why in Korean, on the form, and the key stays', async () => {
    const [a, b] = [await group('9반', { monthly_limit_credits: 20_000_000 }), await group('10반')];
    const spent = await key(a, true);
    const owner = await signIn(t, t.walletId);
    const res = await fetch(`${t.url}/dashboard/keys/${spent}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: `${owner.cookie}; lang=ko`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ group_id: b, csrf: owner.csrf }).toString(),
    });
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toContain('이 키는 이번 달에 사용한 금액이 있어 옮길 수 없습니다.');
    expect(page).toContain('닫은 키의 사용액은 원래 반에 남습니다.');
    expect(await groupOfKey(spent)).toBe(a);
  });
});
