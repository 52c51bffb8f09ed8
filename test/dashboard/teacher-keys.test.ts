// A teacher gives out student keys only. On a wallet that splits usage, a teacher key is not held to what the
// school refuses to students (web search, page reading, remote MCP, videos), so a teacher limited to classes may
// neither make one on their class's page nor turn a student key into one: 403, nothing made or changed, and
// neither form offers it. A key the owner made a teacher's keeps its audience when the teacher saves its other
// fields. The owner still makes and sets teacher keys.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../engine/audit/trail.ts';
import { setManagerGroup } from '../../engine/dashboard/group-scope.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { createdClassId, managerClient, type OwnerClient, signIn } from './owner-client.ts';

const OWNER: Actor = { kind: 'owner', id: 'alice', ip: '127.0.0.1', userAgent: 'test' };

let t: TestGateway;
let owner: OwnerClient;
let walletId: string;
let classId: string;

const keysOf = async () =>
  (
    await t.gw.db.query<{ id: string; name: string; audience: string | null }>(
      `SELECT id, name, audience FROM api_keys WHERE wallet_id = $1 AND kind = 'api' ORDER BY name`,
      [walletId],
    )
  ).rows;
const audienceOf = async (name: string) => (await keysOf()).find((k) => k.name === name)?.audience;
const idOf = async (name: string) => (await keysOf()).find((k) => k.name === name)!.id;

beforeAll(async () => {
  t = await startTestGateway();
  walletId = (await t.gw.ledger.createWallet({ credits: 1_000_000, ownerId: 'alice', splitsUsage: true })).id;
  owner = await signIn(t, walletId);
  const made = await owner.post('/dashboard/groups', { name: '3학년 2반' });
  expect(made.status, await made.clone().text()).toBe(303);
  classId = createdClassId(made);
  await t.gw.db.query(
    `INSERT INTO wallet_managers (wallet_id, identity, role, added_by, added_at) VALUES ($1, 'tom', 'manager', 'alice', now())`,
    [walletId],
  );
  await setManagerGroup(t.gw.db, walletId, 'tom', classId, true, OWNER, new Date(TEST_NOW));
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe("a teacher's keys", () => {
  it('makes student keys in their class, and is refused a teacher key there', async () => {
    const tom = await managerClient(t, walletId, 'tom');
    const page = await (await tom.get(`/dashboard/groups/${classId}`)).text();
    expect(page).toContain('<option value="student" selected>');
    expect(page).not.toContain('<option value="teacher"');

    const student = await tom.post(`/dashboard/groups/${classId}/keys`, { name: 'pupil', audience: 'student' });
    expect(student.status, await student.clone().text()).toBe(303);
    expect(await audienceOf('pupil')).toBe('student');

    const refused = await tom.post(`/dashboard/groups/${classId}/keys`, { name: 'sneaky', audience: 'teacher' });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('teacher keys');
    expect(await audienceOf('sneaky')).toBeUndefined();
  });

  it("may not turn a student key into a teacher's, and keeps a teacher key the owner made", async () => {
    const tom = await managerClient(t, walletId, 'tom');
    const pupil = await idOf('pupil');
    const refused = await tom.post(`/dashboard/keys/${pupil}`, { name: 'pupil', audience: 'teacher', group_id: classId });
    expect(refused.status).toBe(403);
    expect(await audienceOf('pupil')).toBe('student');

    const made = await owner.post(`/dashboard/groups/${classId}/keys`, { name: 'tom-own', audience: 'teacher' });
    expect(made.status, await made.clone().text()).toBe(303);
    const own = await idOf('tom-own');
    expect(await audienceOf('tom-own')).toBe('teacher');
    const kept = await tom.post(`/dashboard/keys/${own}`, { name: 'tom-laptop', audience: 'teacher', group_id: classId });
    expect(kept.status, await kept.clone().text()).toBe(303);
    expect(await audienceOf('tom-laptop')).toBe('teacher');
    // Its row offers the audience it has; a student key's row offers student only.
    const page = await (await tom.get('/dashboard/keys')).text();
    const row = (id: string) => page.slice(page.indexOf(`<tr data-key-id="${id}">`)).split('</tr>')[0]!;
    expect(row(own)).toContain('<option value="teacher" selected>');
    expect(row(pupil)).not.toContain('<option value="teacher"');
  });

  it('leaves the owner free to make and set teacher keys', async () => {
    const pupil = await idOf('pupil');
    const set = await owner.post(`/dashboard/keys/${pupil}`, { name: 'pupil', audience: 'teacher', group_id: classId });
    expect(set.status, await set.clone().text()).toBe(303);
    expect(await audienceOf('pupil')).toBe('teacher');
    const page = await (await owner.get(`/dashboard/groups/${classId}`)).text();
    expect(page).toContain('<option value="teacher"');
  });
});
