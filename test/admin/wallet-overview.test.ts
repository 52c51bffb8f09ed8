// Named wallets and the district overview through the admin API of a real gateway (the shipped config, so
// money is shown in won at 1,400 a dollar): a name given at creation and changed (audited), each wallet's
// balance, this Korean month's spend from the daily rollup, active keys and last call, sorted and as CSV; and
// an owner change that says which management keys it closed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

// 00:30 on 1 December in Korea, still 30 November in UTC: the month whose spend is shown is December.
const NOW = '2026-11-30T15:30:00Z';
const ADMIN = { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' };

let t: TestGateway;
const admin = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${t.url}${path}`, { method, headers: ADMIN, body: body === undefined ? null : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, json: text.startsWith('{') ? JSON.parse(text) : undefined };
};
const spend = (walletId: string, day: string, nano: bigint) =>
  t.gw.db.query(
    `INSERT INTO usage_daily (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens)
     VALUES ($1::date, $2, '', 'b-4.1-mini', 1, $3, 0, 0, 0, 0)`,
    [day, walletId, nano.toString()],
  );

beforeAll(async () => {
  t = await startTestGateway({ clock: fixedClock(NOW) });
});
afterAll(async () => {
  await t?.close();
});

describe('wallet names and the district overview', () => {
  let hanbit: string;
  let quiet: string;

  it('POST {name: "서울한빛중학교"} answers the name, with its money in won, and GET /admin/v1/wallets lists it', async () => {
    const made = await admin('POST', '/admin/v1/wallets', { name: '서울한빛중학교', credits: '₩70,000' });
    expect(made.status, made.text).toBe(201);
    expect(made.json).toMatchObject({ name: '서울한빛중학교', credits: 50_000_000, money: '₩70,000 · $50.00' });
    hanbit = made.json.id;
    quiet = (await admin('POST', '/admin/v1/wallets', { name: '부산바다초등학교', credits: 1_000 })).json.id;
    const list = await admin('GET', '/admin/v1/wallets?limit=200');
    expect(list.json.data.find((w: { id: string }) => w.id === hanbit)).toMatchObject({ name: '서울한빛중학교', credits: 50_000_000 });
    expect(list.json.data.find((w: { id: string }) => w.id === t.walletId).name).toBeNull();
  });

  it('PATCH renames (null: none), recorded in the audit trail with the name before and after; a bad name is a 400', async () => {
    const renamed = await admin('PATCH', `/admin/v1/wallets/${hanbit}`, { name: ' 서울한빛중 ' });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.json).toMatchObject({ id: hanbit, name: '서울한빛중' });
    expect((await admin('PATCH', `/admin/v1/wallets/${hanbit}`, { name: '서울한빛중학교' })).json.name).toBe('서울한빛중학교');
    const audit = await admin('GET', `/admin/v1/wallets/${hanbit}/audit?action=wallet.renamed`);
    expect(audit.json.data.map((e: { before: unknown; after: unknown }) => [e.before, e.after])).toEqual([
      [{ name: '서울한빛중' }, { name: '서울한빛중학교' }],
      [{ name: '서울한빛중학교' }, { name: '서울한빛중' }],
    ]);
    expect(audit.json.data[0]).toMatchObject({ actor: { kind: 'operator', id: 'admin_api' } });
    for (const body of [{}, { name: 42 }, { name: '' }, { name: 'x', credits: 5 }]) {
      const bad = await admin('PATCH', `/admin/v1/wallets/${hanbit}`, body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    expect((await admin('PATCH', '/admin/v1/wallets/wal_nope', { name: 'x' })).status).toBe(404);
    const cleared = await admin('PATCH', `/admin/v1/wallets/${quiet}`, { name: null });
    expect(cleared.json.name).toBeNull();
    await admin('PATCH', `/admin/v1/wallets/${quiet}`, { name: '부산바다초등학교' });
  });

  it("this Korean month's spend from the daily rollup, active keys and the last call", async () => {
    await spend(hanbit, '2026-12-01', 1_400_000_000n); // December in Korea: counted
    await spend(hanbit, '2026-11-30', 9_000_000_000n); // November in Korea: not this month
    const { id: keyId } = await t.gw.keys.createApiKey(hanbit, { name: 'class 3-2' });
    await t.gw.db.query(`UPDATE api_keys SET last_used_at = '2026-11-30T15:10:00Z' WHERE id = $1`, [keyId]);
    const shown = await admin('GET', `/admin/v1/wallets/${hanbit}`);
    expect(shown.json).toMatchObject({
      name: '서울한빛중학교',
      month_spent_credits: 1_400_000,
      month_spent_money: '₩1,960 · $1.40',
      keys_active: 1,
      last_call_at: '2026-11-30T15:10:00.000Z',
    });
    expect((await admin('GET', `/admin/v1/wallets/${quiet}`)).json).toMatchObject({
      month_spent_credits: 0,
      last_call_at: null,
      keys_active: 0,
    });
  });

  it('sorts by a column, either way, paging by cursor in that order; a bad sort is a 400', async () => {
    type View = { id: string; name: string | null; credits: number; month_spent_credits: number; last_call_at: string | null };
    const order = async (sort: string) => {
      const views: View[] = [];
      let cursor = '';
      do {
        const page = await admin('GET', `/admin/v1/wallets?limit=1&sort=${encodeURIComponent(sort)}${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status, page.text).toBe(200);
        views.push(...page.json.data);
        cursor = page.json.next_cursor ?? '';
      } while (cursor);
      return views;
    };
    const all = (await admin('GET', '/admin/v1/wallets?limit=200')).json.data.map((w: View) => w.id).sort();
    const bySpend = await order('-month_spent');
    expect(bySpend.map((w) => w.id).sort()).toEqual(all); // every wallet once, across pages
    expect(bySpend[0]!.id).toBe(hanbit);
    const byName = await order('name');
    expect(byName.slice(0, 2).map((w) => w.id)).toEqual([quiet, hanbit]); // 부산 before 서울
    expect(byName.at(-1)?.name).toBeNull(); // unnamed last
    expect((await order('-last_call_at'))[0]!.id).toBe(hanbit);
    const byCredits = (await order('credits')).map((w) => w.credits);
    expect(byCredits).toEqual([...byCredits].sort((a, b) => a - b));
    const byCreditsDown = (await order('-credits')).map((w) => w.credits);
    expect(byCreditsDown).toEqual([...byCredits].reverse());
    const bad = await admin('GET', '/admin/v1/wallets?sort=size');
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ param: 'sort' });
    const first = await admin('GET', '/admin/v1/wallets?limit=1&sort=name');
    expect((await admin('GET', `/admin/v1/wallets?limit=1&sort=credits&cursor=${first.json.next_cursor}`)).status).toBe(400);
  });

  it('as CSV: won, dollars and credits for the balance and the month, every wallet in the order asked', async () => {
    const res = await fetch(`${t.url}/admin/v1/wallets?format=csv&sort=-month_spent`, { headers: ADMIN });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (await res.text()).trim().split('\r\n');
    const count = (await admin('GET', '/admin/v1/wallets?limit=200')).json.data.length;
    expect(lines).toHaveLength(count + 1);
    expect(lines[1]).toMatch(
      new RegExp(`^${hanbit},서울한빛중학교,70000,50\\.000000,50000000,1960,1\\.400000,1400000,1,100,2026-11-30T15:10:00\\.000Z,`),
    );
    expect((await admin('GET', '/admin/v1/wallets?format=xml')).status).toBe(400);
    // A name a spreadsheet would run as a formula is written as text.
    const formula = (await admin('POST', '/admin/v1/wallets', { name: '=HYPERLINK("http://x.test","a, b")' })).json.id;
    const again = await (await fetch(`${t.url}/admin/v1/wallets?format=csv`, { headers: ADMIN })).text();
    expect(again).toContain(`${formula},"'=HYPERLINK(""http://x.test"",""a, b"")",0,0.000000,0,`);
  });

  it('an owner change answers the management keys it closed', async () => {
    await admin('POST', `/admin/v1/wallets/${quiet}/owner`, { owner_id: 'kim' });
    const mk = await admin('POST', `/admin/v1/wallets/${quiet}/management-keys`, { name: 'ops' });
    const changed = await admin('POST', `/admin/v1/wallets/${quiet}/owner`, { owner_id: 'owner-lee' });
    expect(changed.json).toEqual({
      id: quiet,
      owner_id: 'owner-lee',
      closed_management_keys: [{ id: mk.json.id, name: 'ops', key_prefix: expect.stringMatching(/^sk-svcm-/) }],
    });
    expect(changed.text).not.toContain(mk.json.key);
    // And the audit trail says who closed it and why, beside the owner change.
    const audit = await admin('GET', `/admin/v1/wallets/${quiet}/audit?action=management_key.closed`);
    expect(audit.json.data).toEqual([
      expect.objectContaining({
        target_id: mk.json.id,
        actor: { kind: 'operator', id: 'admin_api' },
        before: expect.objectContaining({ status: 'active', name: 'ops' }),
        after: { status: 'closed', reason: 'owner_changed' },
      }),
    ]);
    const keys = await fetch(`${t.url}/v1/keys`, { headers: { authorization: `Bearer ${mk.json.key}` } });
    expect(keys.status).toBe(401);
  });
});
