// The audit trail: each change to a wallet, made through the key doors, the dashboard and the admin API,
// appears exactly once with the right actor, origin and before/after values, and never a key's secret;
// GET /v1/audit, the admin API and the dashboard page read it back with their filters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type OwnerClient, signIn } from '../dashboard/owner-client.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
let ownerId: string;
let owner: OwnerClient;
let managementKey: string;
let managementKeyId: string;
/** Every full key text this test saw: none may appear in the trail. */
const secrets: string[] = [];

const DOORS_UA = 'audit-test-doors/1';
const ADMIN_UA = 'audit-test-admin/1';

const doors = (method: string, path: string, body?: unknown) =>
  fetch(`${t.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json', 'user-agent': DOORS_UA },
    body: body === undefined ? null : JSON.stringify(body),
  });
const admin = (method: string, path: string, body?: unknown) =>
  fetch(`${t.url}/admin/v1/wallets/${t.walletId}${path}`, {
    method,
    headers: { ...ADMIN, 'user-agent': ADMIN_UA, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
async function trail(query = ''): Promise<any[]> {
  const res = await admin('GET', `/audit?limit=500${query}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as any).data;
}
/** The one entry of this action about this target: fails when there is none or more than one. */
async function theEntry(action: string, targetId: string | null): Promise<any> {
  const found = (await trail(`&action=${action}`)).filter((e) => e.target_id === targetId);
  expect(found, `${action} ${targetId}`).toHaveLength(1);
  return found[0];
}

beforeAll(async () => {
  t = await startTestGateway();
  ownerId = (await t.gw.ledger.getWallet(t.walletId))!.ownerId;
  const made = await admin('POST', '/management-keys', { name: 'ops' });
  const mk = (await made.json()) as any;
  managementKey = mk.key;
  managementKeyId = mk.id;
  secrets.push(mk.key);
  owner = await signIn(t, t.walletId);
});
afterAll(() => t?.close());

describe('the audit trail', () => {
  it('the admin API: a management key made is recorded once, as the operator, with address and user agent', async () => {
    const e = await theEntry('management_key.created', managementKeyId);
    expect(e.actor).toEqual({ kind: 'operator', id: 'admin_api' });
    expect(e.ip).toBe('127.0.0.1');
    expect(e.user_agent).toBe(ADMIN_UA);
    expect(e.before).toBeNull();
    expect(e.after).toMatchObject({ name: 'ops', created_by: ownerId });
    expect(e.after.key_prefix).toMatch(/^sk-svcm-/);
  });

  it('the key doors: create, change and close, each once, as the management key, with before and after', async () => {
    const created = (await (await doors('POST', '/v1/keys', { name: 'lab', models: ['b-*'] })).json()) as any;
    const key = created.data[0];
    secrets.push(key.key);
    const c = await theEntry('key.created', key.id);
    expect(c.actor).toEqual({ kind: 'management_key', id: managementKeyId });
    expect(c.user_agent).toBe(DOORS_UA);
    expect(c.after).toMatchObject({ name: 'lab', models: ['b-*'], monthly_limit_credits: null });

    expect((await doors('PATCH', `/v1/keys/${key.id}`, { monthly_limit_credits: 100, models: ['tts-1'], name: 'lab' })).status).toBe(200);
    const changed = await theEntry('key.changed', key.id);
    expect(changed.before).toEqual({ monthly_limit_credits: null, models: ['b-*'] });
    expect(changed.after).toEqual({ monthly_limit_credits: 100, models: ['tts-1'] });

    // Nothing changed, or a refused change: nothing recorded.
    expect((await doors('PATCH', `/v1/keys/${key.id}`, {})).status).toBe(200);
    expect((await doors('PATCH', `/v1/keys/${key.id}`, { models: ['bad pattern'] })).status).toBe(400);
    expect((await doors('PATCH', `/v1/keys/${key.id}`, { monthly_limit_credits: 100 })).status).toBe(200);
    await theEntry('key.changed', key.id);

    expect((await doors('DELETE', `/v1/keys/${key.id}`)).status).toBe(200);
    const closed = await theEntry('key.closed', key.id);
    expect(closed.before).toMatchObject({ status: 'active', name: 'lab' });
    expect(closed.after).toEqual({ status: 'closed' });
    expect(closed.actor.kind).toBe('management_key');
  });

  it('the dashboard: key and management key changes, each once, as the signed-in owner', async () => {
    const made = await owner.follow(await owner.post('/dashboard/keys', { count: '1', name: 'dash', models: 'tts-1, b-*' }));
    const page = await made.text();
    const keyId = /data-key-id="([^"]+)"/.exec(page)![1]!;
    secrets.push(/<code class="secret"[^>]*>([^<]+)</.exec(page)![1]!);
    const c = await theEntry('key.created', keyId);
    expect(c.actor).toEqual({ kind: 'owner', id: ownerId });
    expect(c.after.models).toEqual(['tts-1', 'b-*']);

    // The form sends every field; only the one that differs is recorded.
    const form = { name: 'dash', monthly_limit_credits: '', daily_limit_credits: '50', expires_on: '', models: 'tts-1, b-*' };
    expect((await owner.post(`/dashboard/keys/${keyId}`, form)).status).toBe(303);
    const changed = await theEntry('key.changed', keyId);
    expect(changed.before).toEqual({ daily_limit_credits: null });
    expect(changed.after).toEqual({ daily_limit_credits: 50 });
    expect(changed.actor).toEqual({ kind: 'owner', id: ownerId });

    expect((await owner.post(`/dashboard/keys/${keyId}/close`, { confirm: 'yes' })).status).toBe(303);
    expect((await theEntry('key.closed', keyId)).actor.kind).toBe('owner');

    const mk = await owner.follow(await owner.post('/dashboard/management-keys', { name: 'dash-mk' }));
    const mkPage = await mk.text();
    const mkId = /data-key-id="([^"]+)"/.exec(mkPage)![1]!;
    secrets.push(/id="new-management-key"[^>]*>([^<]+)</.exec(mkPage)![1]!);
    expect((await theEntry('management_key.created', mkId)).actor).toEqual({ kind: 'owner', id: ownerId });
    expect((await owner.post(`/dashboard/management-keys/${mkId}/close`, { confirm: 'yes' })).status).toBe(303);
    const mkClosed = await theEntry('management_key.closed', mkId);
    expect(mkClosed.actor.kind).toBe('owner');
    expect(mkClosed.before).toMatchObject({ status: 'active', name: 'dash-mk' });
  });

  it('GET /v1/audit gives the management key its wallet, newest first, filtered and a page at a time', async () => {
    const all = (await (await doors('GET', '/v1/audit')).json()) as any;
    expect(all.object).toBe('list');
    expect(all.total).toBe(all.data.length);
    // Newest first: the dashboard's management key closed last.
    expect(all.data[0].action).toBe('management_key.closed');
    expect(all.data.at(-1).action).toBe('management_key.created');
    const closes = (await (await doors('GET', '/v1/audit?action=key.closed')).json()) as any;
    expect(closes.data.map((e: any) => e.action)).toEqual(['key.closed', 'key.closed']);
    const page = (await (await doors('GET', '/v1/audit?limit=2&offset=1')).json()) as any;
    expect(page.data.map((e: any) => e.id)).toEqual(all.data.slice(1, 3).map((e: any) => e.id));
    expect(page.has_more).toBe(true);
    expect(((await (await doors('GET', `/v1/audit?since=${encodeURIComponent('2026-11-22T00:00:00Z')}`)).json()) as any).total).toBe(0);
    expect(((await (await doors('GET', `/v1/audit?until=${encodeURIComponent(TEST_NOW)}`)).json()) as any).total).toBe(0);
    expect(((await (await doors('GET', `/v1/audit?since=${encodeURIComponent(TEST_NOW)}`)).json()) as any).total).toBe(all.total);
    for (const bad of ['action=key.eaten', 'since=yesterday', 'limit=0']) {
      const res = await doors('GET', `/v1/audit?${bad}`);
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as any).error.param).toBe(bad.split('=')[0]);
    }
    expect((await fetch(`${t.url}/v1/audit`, { headers: { authorization: `Bearer ${t.apiKey}` } })).status).toBe(401);
    const described = ((await (await fetch(`${t.url}/openapi.json`)).json()) as any).paths['/v1/audit'].get;
    expect(described.security).toEqual([{ managementKey: [] }]);
    expect(described.parameters.map((p: any) => p.name)).toEqual(['action', 'since', 'until', 'limit', 'offset']);
  });

  it('the admin API: credits added and the owner changed, each once, as the operator', async () => {
    const topUp = (await (await admin('POST', '/credits', { credits: 5000, vendors: ['c'] })).json()) as any;
    const added = await theEntry('credits.added', topUp.lot_id);
    expect(added.after).toEqual({ credits: 5000, vendors: ['c'] });
    expect(added.actor).toEqual({ kind: 'operator', id: 'admin_api' });

    expect((await admin('POST', '/owner', { owner_id: 'new-owner' })).status).toBe(200);
    expect((await admin('POST', '/owner', { owner_id: 'new-owner' })).status).toBe(200); // no change: no entry
    const owned = await theEntry('owner.changed', null);
    expect(owned.before).toEqual({ owner_id: ownerId });
    expect(owned.after).toEqual({ owner_id: 'new-owner' });

    const mk = (await (await admin('POST', '/management-keys', {})).json()) as any;
    secrets.push(mk.key);
    expect((await admin('DELETE', `/management-keys/${mk.id}`)).status).toBe(200);
    const closed = await theEntry('management_key.closed', mk.id);
    expect(closed.actor).toEqual({ kind: 'operator', id: 'admin_api' });
    expect(closed.user_agent).toBe(ADMIN_UA);
  });

  it('never holds a key secret', async () => {
    const text = JSON.stringify(await trail());
    expect(secrets.length).toBeGreaterThanOrEqual(5);
    for (const s of secrets) expect(text).not.toContain(s);
    expect(text).not.toMatch(/sk-svcm?-[A-Za-z0-9]{20,}/);
  });

  it('the dashboard page lists the trail, filters it, and escapes what clients wrote', async () => {
    // The owner changed above; a fresh sign-in is the new owner's.
    const fresh = await signIn(t, t.walletId);
    const evil = '<script>alert(1)</script>';
    await t.gw.ledger.topUp(t.walletId, { credits: 1 }); // a change with no audit hook is not listed
    const mk = (await (await admin('POST', '/management-keys', { name: 'x' })).json()) as any;
    await fetch(`${t.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mk.key}`, 'content-type': 'application/json', 'user-agent': evil },
      body: JSON.stringify({ name: evil }),
    });
    const page = await (await fresh.get('/dashboard/audit')).text();
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).not.toContain(evil);
    expect(page).toContain('owner.changed');
    const filtered = await (await fresh.get('/dashboard/audit?action=credits.added')).text();
    expect(filtered.match(/<tr data-audit-id=/g)).toHaveLength(1);
    expect(filtered).not.toContain('<td>owner.changed</td>');
    const none = await (await fresh.get('/dashboard/audit?from=2026-11-22')).text();
    expect(none.match(/<tr data-audit-id=/g)).toBeNull();
    expect((await fresh.get('/dashboard/audit?from=someday')).status).toBe(400);
  });
});
