// A Korean school owner's class and key forms, over HTTP on the shipped configuration (won shown at ₩1,400 a
// dollar): keys made on a class's page keep the models typed; a class name another class has is refused in
// Korean (the API, which names groups by id, still allows it); change forms show a limit typed in won as the won
// typed; a refused form's address, reloaded, leads back to its page; the key-slot sentence counts the wallet's
// keys whichever class the list shows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { createdClassId, type OwnerClient, signIn } from './owner-client.ts';

let t: TestGateway;
let owner: OwnerClient;
let walletId: string;

/** A form POST as the owner's browser set to Korean sends it. */
const postKo = (path: string, form: Record<string, string>) =>
  fetch(`${t.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: `${owner.cookie}; lang=ko`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...form, csrf: owner.csrf }).toString(),
  });

/** A page as the owner's browser set to Korean loads it. */
const getKo = (path: string) => fetch(`${t.url}${path}`, { headers: { cookie: `${owner.cookie}; lang=ko` } });

async function makeClass(name: string, extra: Record<string, string> = {}): Promise<string> {
  const res = await owner.post('/dashboard/groups', { name, ...extra });
  expect(res.status, await res.clone().text()).toBe(303);
  return createdClassId(res);
}

const keysOf = async (groupId: string) =>
  (
    await t.gw.db.query<{ name: string; models: string[] | null }>(
      `SELECT name, models FROM api_keys WHERE group_id = $1 AND closed_at IS NULL ORDER BY name`,
      [groupId],
    )
  ).rows;

beforeAll(async () => {
  t = await startTestGateway();
  walletId = (await t.gw.ledger.createWallet({ credits: 100_000_000, ownerId: 'school', name: '한빛중학교', keySlots: 50 })).id;
  owner = await signIn(t, walletId);
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe("a class's forms", () => {
  it("keys made on a class's page keep the models typed, and a refused one's address leads back to the class", async () => {
    const cls = await makeClass('1학년 3반');
    const made = await owner.post(`/dashboard/groups/${cls}/keys`, { count: '2', name: 'student', models: 'b-5, b-4.1' });
    expect(made.status, await made.clone().text()).toBe(303);
    const keys = await keysOf(cls);
    expect(keys.map((k) => [k.name, [...(k.models ?? [])].sort()])).toEqual([
      ['student 1', ['b-4.1', 'b-5']],
      ['student 2', ['b-4.1', 'b-5']],
    ]);
    const refused = await owner.post(`/dashboard/groups/${cls}/keys`, { count: 'many', models: 'b-5' });
    expect(refused.status).toBe(400);
    expect(await keysOf(cls)).toHaveLength(2);
    const reloaded = await owner.get(`/dashboard/groups/${cls}/keys`);
    expect(reloaded.status).toBe(303);
    expect(reloaded.headers.get('location')).toBe(`/dashboard/groups/${encodeURIComponent(cls)}`);
  });

  it('a name another class has is refused in Korean, case aside; a deleted class frees its name; the API allows it', async () => {
    const first = await makeClass('2학년 A반');
    const again = await postKo('/dashboard/groups', { name: '2학년 a반' });
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('같은 이름의 반(&#39;2학년 a반&#39;)이 이미 있습니다. 다른 이름을 쓰세요.');
    const other = await makeClass('2학년 B반');
    const rename = await postKo(`/dashboard/groups/${other}`, { name: '2학년 A반', monthly_limit_credits: '', daily_limit_credits: '' });
    expect(rename.status).toBe(400);
    const names = await t.gw.db.query<{ name: string }>(`SELECT name FROM key_groups WHERE id = ANY($1) ORDER BY name`, [[first, other]]);
    expect(names.rows.map((r) => r.name)).toEqual(['2학년 A반', '2학년 B반']);
    // Saving a class under its own name is no clash.
    expect(
      (await owner.post(`/dashboard/groups/${first}`, { name: '2학년 A반', monthly_limit_credits: '', daily_limit_credits: '' })).status,
    ).toBe(303);
    expect((await owner.post(`/dashboard/groups/${first}/delete`, { confirm: 'yes' })).status).toBe(303);
    await makeClass('2학년 A반');
    const mgmt = (await t.gw.keys.createManagementKey(walletId)).key;
    const api = await fetch(`${t.url}/v1/key-groups`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mgmt}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: '2학년 A반' }),
    });
    expect(api.status).toBe(201);
  });

  it('a blank class name is refused in Korean words, not the English of the door', async () => {
    const res = await postKo('/dashboard/groups', { name: '   ' });
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toContain('1자 이상 40자 이하여야 합니다.');
    expect(page).not.toContain('is required');
  });

  it('change forms show a limit typed in won as that won, and saving them unchanged keeps the credits', async () => {
    const cls = await makeClass('3학년 1반', { monthly_limit_credits: '₩70,000', daily_limit_credits: '1,234,567' });
    const page = await (await owner.get(`/dashboard/groups/${cls}`)).text();
    expect(page).toContain(`name="monthly_limit_credits" value="₩70,000"`);
    expect(page).toContain(`name="daily_limit_credits" value="1,234,567"`); // no whole won: credits as typed
    const saved = await owner.post(`/dashboard/groups/${cls}`, {
      name: '3학년 1반',
      monthly_limit_credits: '₩70,000',
      daily_limit_credits: '1,234,567',
    });
    expect(saved.status).toBe(303);
    const row = await t.gw.db.query<{ m: string; d: string }>(
      `SELECT monthly_limit_credits::text AS m, daily_limit_credits::text AS d FROM key_groups WHERE id = $1`,
      [cls],
    );
    expect(row.rows[0]).toEqual({ m: '50000000', d: '1234567' });
    const key = await owner.post('/dashboard/keys', { count: '1', name: 'won-key', monthly_limit_credits: '₩14,000' });
    expect(key.status).toBe(303);
    const keysPage = await (await owner.get('/dashboard/keys')).text();
    expect(keysPage).toMatch(/name="monthly_limit_credits" value="₩14,000"/);
  });

  it('a key whose daily limit is used up says so in its row; one with room left does not', async () => {
    const made = await owner.post('/dashboard/keys', { count: '2', name: 'day' });
    const shown = await (await owner.follow(made)).text();
    const [full, spare] = [...shown.matchAll(/<tr data-key-id="([^"]+)">[\s\S]*?<code class="secret"[^>]*>([^<]+)<\/code>/g)].map((m) => ({
      id: m[1]!,
      secret: m[2]!,
    }));
    for (const k of [full!, spare!]) {
      const res = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status, await res.clone().text()).toBe(200);
      await res.arrayBuffer();
    }
    expect((await owner.post(`/dashboard/keys/${full!.id}`, { name: 'day 1', daily_limit_credits: '1' })).status).toBe(303);
    expect((await owner.post(`/dashboard/keys/${spare!.id}`, { name: 'day 2', daily_limit_credits: '1,000,000,000' })).status).toBe(303);
    const page = await (await owner.get('/dashboard/keys')).text();
    const row = (id: string) => new RegExp(`<tr data-key-id="${id}">[\\s\\S]*?</tr>`).exec(page)![0];
    expect(row(full!.id)).toContain('<strong data-testid="reached">limit reached</strong>');
    expect(row(spare!.id)).not.toContain('data-testid="reached"');
    // The usage page's totals say the money first, as every amount on the owner's pages does.
    const usage = await (await owner.get('/dashboard/usage')).text();
    expect(usage).toMatch(
      /data-testid="usage-totals"[^>]*>In these days: <strong>(₩[\d,]+|&lt;₩1) · \$[\d.]+<\/strong> \([\d,.]+ credits\) over 2 calls/,
    );
  });

  it("the key-slot sentence counts the wallet's keys whichever class the list shows; a refused change's address leads to the list", async () => {
    const slots = (page: string) => /([\d,]+) active of ([\d,]+) key slots/.exec(page)?.slice(1);
    const all = slots(await (await owner.get('/dashboard/keys')).text());
    const cls = await makeClass('4학년 1반');
    const one = slots(await (await owner.get(`/dashboard/keys?class=${encodeURIComponent(cls)}`)).text());
    expect(all).toBeDefined();
    expect(Number(all![0]!.replace(/,/g, ''))).toBeGreaterThan(0);
    expect(one).toEqual(all);
    const back = await owner.get('/dashboard/keys/key_anything');
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe('/dashboard/keys');
  });

  it('creating and saving a class says so once, above its page, in Korean', async () => {
    const made = await postKo('/dashboard/groups', { name: '4학년 7반' });
    expect(made.status, await made.clone().text()).toBe(303);
    expect(made.headers.get('location')).toMatch(/^\/dashboard\/groups\/[^?]+\?done=created$/);
    expect(await (await getKo(made.headers.get('location')!)).text()).toContain('<p class="ok" role="status">반을 만들었습니다.</p>');
    const cls = createdClassId(made);
    const saved = await postKo(`/dashboard/groups/${cls}`, {
      name: '4학년 7반',
      monthly_limit_credits: '₩10,000',
      daily_limit_credits: '',
    });
    expect(saved.status).toBe(303);
    expect(await (await getKo(saved.headers.get('location')!)).text()).toContain('반을 저장했습니다.');
    // The class's own address, reloaded later, says nothing; nor does an outcome the page does not know.
    for (const path of [`/dashboard/groups/${cls}`, `/dashboard/groups/${cls}?done=toString`, '/dashboard/keys?done=constructor']) {
      const page = await getKo(path);
      expect(page.status, path).toBe(200);
      expect(await page.text(), path).not.toContain('class="ok"');
    }
  });

  it('deleting a class asks first; only the yes deletes it, and the list then says it was deleted', async () => {
    const cls = await makeClass('5학년 3반');
    const page = await (await owner.get(`/dashboard/groups/${cls}`)).text();
    // The class page has no form that deletes at once: its button opens the question.
    expect(page).not.toContain(`method="post" action="/dashboard/groups/${cls}/delete"`);
    expect(page).toContain(`<form method="get" action="/dashboard/groups/${cls}/delete">`);
    const asked = await getKo(`/dashboard/groups/${cls}/delete`);
    expect(asked.status).toBe(200);
    const question = await asked.text();
    expect(question).toContain('5학년 3반을 삭제할까요?');
    expect(question).toContain('name="confirm" value="yes"');
    const stray = await owner.post(`/dashboard/groups/${cls}/delete`, {});
    expect(stray.headers.get('location')).toBe(`/dashboard/groups/${cls}/delete`);
    const alive = await t.gw.db.query(`SELECT 1 FROM key_groups WHERE id = $1 AND deleted_at IS NULL`, [cls]);
    expect(alive.rowCount).toBe(1);
    const yes = await owner.post(`/dashboard/groups/${cls}/delete`, { confirm: 'yes' });
    expect(yes.headers.get('location')).toBe('/dashboard/groups?done=deleted');
    expect(await (await owner.follow(yes)).text()).toContain('The class was deleted.');
    const gone = await t.gw.db.query(`SELECT 1 FROM key_groups WHERE id = $1 AND deleted_at IS NULL`, [cls]);
    expect(gone.rowCount).toBe(0);
  });

  it('a class with keys is not deleted: its page says how many keys and what to do, in Korean, at 409', async () => {
    const cls = await makeClass('6학년 2반');
    expect((await owner.post(`/dashboard/groups/${cls}/keys`, { name: '6-2 지민' })).status).toBe(303);
    const refusedText = '6학년 2반에 사용 중인 키가 1개 있어 삭제할 수 없습니다.';
    const asked = await getKo(`/dashboard/groups/${cls}/delete`);
    expect(asked.status).toBe(409);
    const page = await asked.text();
    expect(page).toContain(refusedText);
    expect(page).toContain('value="6학년 2반"'); // the change form keeps the saved name
    const yes = await postKo(`/dashboard/groups/${cls}/delete`, { confirm: 'yes' });
    expect(yes.status).toBe(409);
    expect(await yes.text()).toContain(refusedText);
    const alive = await t.gw.db.query(`SELECT 1 FROM key_groups WHERE id = $1 AND deleted_at IS NULL`, [cls]);
    expect(alive.rowCount).toBe(1);
  });
});
