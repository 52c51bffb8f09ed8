// Keys by class on the dashboard, over HTTP: the owner puts a new key in a class from the keys page, sees each
// key's class in the list, shows one class's keys (or the keys in none), and moves a key to another class or out of
// every class, each move in the audit trail. A teacher moves a key only between their own classes: into another
// class, or out of every class, is refused (403) and the key stays where it was. The usage page, its chart, totals
// and both CSVs show one class's calls, closed keys' too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../engine/audit/trail.ts';
import { setManagerGroup } from '../../engine/dashboard/group-scope.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { createdClassId, managerClient, type OwnerClient, signIn } from './owner-client.ts';

const OWNER: Actor = { kind: 'owner', id: 'alice', ip: '127.0.0.1', userAgent: 'test' };

let t: TestGateway;
let owner: OwnerClient;
let walletId: string;
const classes: Record<'a' | 'b' | 'c', string> = { a: '', b: '', c: '' };

/** The ids and class cells of the keys a keys page lists, in its order. */
function listed(page: string): { id: string; cls: string }[] {
  return [...page.matchAll(/<tr data-key-id="([^"]+)">[\s\S]*?<td data-testid="class">([\s\S]*?)<\/td>/g)].map((m) => ({
    id: m[1]!,
    cls: m[2]!.replace(/<[^>]+>/g, ''),
  }));
}

const groupOf = async (keyId: string) =>
  (await t.gw.db.query<{ group_id: string | null }>(`SELECT group_id FROM api_keys WHERE id = $1`, [keyId])).rows[0]?.group_id;

async function makeKey(name: string, groupId: string): Promise<string> {
  return (await makeKeyWithSecret(name, groupId)).id;
}

/** A key made on the keys page; its secret read from the page that shows it once. */
async function makeKeyWithSecret(name: string, groupId: string): Promise<{ id: string; secret: string }> {
  const res = await owner.post('/dashboard/keys', { name, group_id: groupId });
  expect(res.status, await res.clone().text()).toBe(303);
  const shown = await (await owner.follow(res)).text();
  const m = /<tr data-key-id="([^"]+)">[\s\S]*?<code class="secret"[^>]*>([^<]+)<\/code>/.exec(shown);
  return { id: m![1]!, secret: m![2]! };
}

async function chat(secret: string): Promise<void> {
  const res = await fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.arrayBuffer();
}

beforeAll(async () => {
  t = await startTestGateway();
  walletId = (await t.gw.ledger.createWallet({ credits: 100_000_000, ownerId: 'alice', name: '한빛중학교' })).id;
  owner = await signIn(t, walletId);
  for (const [k, name] of [
    ['a', '1학년 1반'],
    ['b', '1학년 2반'],
    ['c', '2학년 1반'],
  ] as const) {
    const res = await owner.post('/dashboard/groups', { name });
    expect(res.status, await res.clone().text()).toBe(303);
    classes[k] = createdClassId(res);
  }
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe('keys by class on the dashboard', () => {
  it('puts a new key in a class, lists each key with its class, and shows one class or none', async () => {
    const inA = await makeKey('a-key', classes.a);
    const loose = await makeKey('loose-key', '');
    expect(await groupOf(inA)).toBe(classes.a);
    expect(await groupOf(loose)).toBeNull();

    const all = await (await owner.get('/dashboard/keys')).text();
    expect(listed(all)).toEqual(
      expect.arrayContaining([
        { id: inA, cls: '1학년 1반' },
        { id: loose, cls: 'No class' },
      ]),
    );
    expect(all).toContain('data-testid="class-filter"');

    const onlyA = listed(await (await owner.get(`/dashboard/keys?class=${classes.a}`)).text()).map((k) => k.id);
    expect(onlyA).toContain(inA);
    expect(onlyA).not.toContain(loose);
    const none = listed(await (await owner.get('/dashboard/keys?class=none')).text()).map((k) => k.id);
    expect(none).toContain(loose);
    expect(none).not.toContain(inA);
    // The create form offers the classes, and the row's change form the key's own class, selected.
    const rowForm = all.slice(all.indexOf(`<tr data-key-id="${inA}">`));
    expect(rowForm).toMatch(new RegExp(`<option value="${classes.a}" selected>1학년 1반</option>`));
  });

  it('moves a key to another class and out of every class, each move in the audit trail', async () => {
    const key = await makeKey('moving-key', classes.a);
    const moved = await owner.post(`/dashboard/keys/${key}`, { group_id: classes.b });
    expect(moved.status, await moved.clone().text()).toBe(303);
    expect(await groupOf(key)).toBe(classes.b);
    const out = await owner.post(`/dashboard/keys/${key}`, { group_id: '' });
    expect(out.status).toBe(303);
    expect(await groupOf(key)).toBeNull();
    const trail = await t.gw.db.query<{ before: Record<string, unknown>; after: Record<string, unknown> }>(
      `SELECT before, after FROM wallet_audit WHERE wallet_id = $1 AND action = 'key.changed' AND target_id = $2 ORDER BY seq`,
      [walletId, key],
    );
    expect(trail.rows.map((r) => [r.before.group_id, r.after.group_id])).toEqual([
      [classes.a, classes.b],
      [classes.b, null],
    ]);
  });

  it('lets a teacher move a key between their own classes only, and refuses moving it out of them', async () => {
    await t.gw.db.query(
      `INSERT INTO wallet_managers (wallet_id, identity, role, added_by, added_at) VALUES ($1, 'tom', 'manager', 'alice', now())`,
      [walletId],
    );
    await setManagerGroup(t.gw.db, walletId, 'tom', classes.a, true, OWNER, new Date(TEST_NOW));
    await setManagerGroup(t.gw.db, walletId, 'tom', classes.b, true, OWNER, new Date(TEST_NOW));
    const key = await makeKey('tom-key', classes.a);
    const tom = await managerClient(t, walletId, 'tom');

    const page = await (await tom.get('/dashboard/keys')).text();
    // Tom's classes only, and no "no class" choice: a key he took out of every class would leave his hands.
    expect(page).toContain(`<option value="${classes.b}">`);
    expect(page).not.toContain(`<option value="${classes.c}">`);
    expect(page).not.toContain('<option value="none"');

    for (const elsewhere of [classes.c, '']) {
      const refused = await tom.post(`/dashboard/keys/${key}`, { group_id: elsewhere });
      expect(refused.status).toBe(403);
      expect(await groupOf(key)).toBe(classes.a);
    }
    const moved = await tom.post(`/dashboard/keys/${key}`, { group_id: classes.b });
    expect(moved.status, await moved.clone().text()).toBe(303);
    expect(await groupOf(key)).toBe(classes.b);
    // A filter naming a class not his shows his classes' keys, not that class's.
    await makeKey('c-key', classes.c);
    const asked = listed(await (await tom.get(`/dashboard/keys?class=${classes.c}`)).text());
    expect(asked.map((k) => k.cls)).not.toContain('2학년 1반');
    expect(asked.map((k) => k.id)).toContain(key);
  });

  it("refuses a teacher moving a key that has spent this month: its use would free room under the class's limit", async () => {
    // Found by an attack: a teacher spent a class's month, moved the spent keys to their other class, and class A
    // read 0 used again; four rounds spent 610 credits against two limits of 250.
    const tom = await managerClient(t, walletId, 'tom');
    const spent = await makeKeyWithSecret('spent-key', classes.a);
    await chat(spent.secret);
    const used = async () => {
      const page = await (await owner.get(`/dashboard/groups/${classes.a}`)).text();
      return /data-testid="group-month">([^<]*)/.exec(page)![1];
    };
    const before = await used();
    const refused = await tom.post(`/dashboard/keys/${spent.id}`, { group_id: classes.b });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('spent this month');
    expect(await groupOf(spent.id)).toBe(classes.a);
    expect(await used()).toBe(before);
    // Saving its other fields with its own class is no move; the owner may move it.
    const renamed = await tom.post(`/dashboard/keys/${spent.id}`, { name: 'spent-renamed', group_id: classes.a });
    expect(renamed.status, await renamed.clone().text()).toBe(303);
    const moved = await owner.post(`/dashboard/keys/${spent.id}`, { group_id: classes.b });
    expect(moved.status).toBe(303);
    expect(await groupOf(spent.id)).toBe(classes.b);
  });

  it('refuses a teacher moving a key whose calls are in progress: they were admitted under its class and would be charged to the other', async () => {
    // Found by two attacks: a class spent to its limit, a key of the other class with ten calls at the vendor moved
    // into it; the emptied class admitted more, and the full one ended at 188% of its limit. The second attack moved
    // the key within the 250 ms before its process had told the calls' holds to the database.
    const tom = await managerClient(t, walletId, 'tom');
    // Each try moves a fresh key the moment its call reaches the vendor; a try counts once the move came before the
    // process had told the call's hold, which is what a move must not miss (a busy machine may tell it first).
    let untold = 0;
    for (let attempt = 0; attempt < 6 && untold === 0; attempt++) {
      const busy = await makeKeyWithSecret(`busy-key-${attempt}`, classes.a);
      const told = async () =>
        (await t.gw.db.query(`SELECT 1 FROM reservations WHERE state = 'held' AND (key_id = $1 OR in_flight_by_key ? $1)`, [busy.id])).rows
          .length > 0;
      t.sim.inject('b0', { kind: 'delay', ms: 1500, times: 1 });
      const sent = t.sim.received.length;
      const call = chat(busy.secret);
      try {
        for (let i = 0; i < 200 && t.sim.received.length === sent; i++) await new Promise((r) => setTimeout(r, 5));
        expect(t.sim.received.length, 'the call never reached the vendor').toBeGreaterThan(sent);
        if (!(await told())) untold++;
        const refused = await tom.post(`/dashboard/keys/${busy.id}`, { group_id: classes.b });
        expect(refused.status).toBe(403);
        expect(await refused.text()).toContain('calls in progress');
        expect(await groupOf(busy.id)).toBe(classes.a);
        // The owner, who sets the limits, may.
        const moved = await owner.post(`/dashboard/keys/${busy.id}`, { group_id: classes.b });
        expect(moved.status).toBe(303);
      } finally {
        await call;
      }
    }
    expect(untold, 'no try moved the key before its hold was told').toBeGreaterThan(0);
  });

  it("answers a teacher's refused page with the teacher's navigation, not the whole wallet's", async () => {
    const tom = await managerClient(t, walletId, 'tom');
    const refused = await tom.get('/dashboard/managers');
    expect(refused.status).toBe(403);
    const page = await refused.text();
    expect(page).toContain('href="/dashboard/groups"');
    expect(page).not.toContain('href="/dashboard/wallet"');
  });

  it("shows one class's calls on the usage page and in both CSVs, its closed keys' calls too", async () => {
    const inC = await makeKeyWithSecret('c-usage', classes.c);
    const closedInC = await makeKeyWithSecret('c-closed', classes.c);
    const elsewhere = await makeKeyWithSecret('b-usage', classes.b);
    for (const k of [inC, inC, closedInC, elsewhere]) await chat(k.secret);
    const closed = await owner.post(`/dashboard/keys/${closedInC.id}/close`, { confirm: 'yes' });
    expect(closed.status).toBe(303);
    expect(await t.gw.db.query(`SELECT 1 FROM api_keys WHERE id = $1 AND closed_at IS NOT NULL`, [closedInC.id])).toMatchObject({
      rows: [{}],
    });

    const page = await (await owner.get(`/dashboard/usage?class=${classes.c}`)).text();
    const table = page.slice(page.indexOf('data-testid="usage-table"'));
    const callRows = [...table.matchAll(/<tr data-generation-id="[^"]+"><td>.*?<\/td><td>([^<]*)<\/td>/g)].map((m) => m[1]);
    expect(callRows.sort()).toEqual(['c-closed', 'c-usage', 'c-usage']);
    expect(page).toMatch(/data-testid="usage-totals"[^>]*data-calls="3"/);
    expect(page).toContain('2학년 1반');
    expect(page).toMatch(new RegExp(`<option value="${classes.c}" selected>`));

    const csv = await (await owner.get(`/dashboard/usage.csv?class=${classes.c}`)).text();
    expect(csv).toContain('c-closed');
    expect(csv).not.toContain('b-usage');
    const month = TEST_NOW.slice(0, 7);
    const summary = await (await owner.get(`/dashboard/usage-summary.csv?month=${month}&class=${classes.c}`)).text();
    expect(summary).toContain('c-usage');
    expect(summary).not.toContain('b-usage');
    // The class's own CSV reads the same rows.
    const own = await (await owner.get(`/dashboard/groups/${classes.c}/usage.csv?month=${month}`)).text();
    expect(own).toBe(summary);
  });
});
