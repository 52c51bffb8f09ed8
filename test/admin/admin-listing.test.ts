// The admin API's listing and management-key calls over real HTTP, on both databases, with the real key
// service behind them: wallets paged by an opaque cursor without gaps or repeats, the wallet view split
// into general and vendor-restricted credits, management keys listed without secrets and closed at once
// (the key doors refuse a closed key on its very next call), and the name echoed on creation.
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { registerAdminRoutes } from '../../engine/admin/routes.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import { closeManagementKey, createKeyService, type KeyService, registerKeyRoutes } from '../../engine/keys/index.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const TOKEN = 'listing-admin-token';
const auth = { authorization: `Bearer ${TOKEN}` };

interface Page {
  data: { id: string; created_at: string }[];
  has_more: boolean;
  next_cursor: string | null;
}

describeEachDatabase('admin listing and management keys', (getDb) => {
  const clock = fixedClock('2026-05-01T00:00:00Z');
  let app: FastifyInstance;
  let base: string;
  let ledger: Ledger;
  let keys: KeyService;

  beforeAll(async () => {
    const db = getDb();
    ledger = createLedger(db, { clock });
    keys = createKeyService(db, { clock });
    app = Fastify();
    await registerKeyRoutes(app, { keys, db, clock });
    await registerAdminRoutes(app, {
      ledger,
      db,
      adminToken: TOKEN,
      clock,
      createManagementKey: (walletId, name) => keys.createManagementKey(walletId, name),
      closeManagementKey: (walletId, keyId, actor) => closeManagementKey(keys, walletId, keyId, actor),
      onOwnerChanged: (walletId) => keys.closeFormerOwnerManagementKeys(walletId),
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await keys?.close();
  });

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = auth) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? null : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
  };
  const newWallet = async (body: Record<string, unknown> = {}) => (await call('POST', '/admin/v1/wallets', body)).json as { id: string };

  it('refuses every new route without the admin token (401, chat shape)', async () => {
    const w = await newWallet();
    for (const [method, path] of [
      ['GET', '/admin/v1/wallets'],
      ['GET', `/admin/v1/wallets/${w.id}/management-keys`],
      ['DELETE', `/admin/v1/wallets/${w.id}/management-keys/key_x`],
    ] as const) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }] as Record<string, string>[]) {
        const res = await call(method, path, undefined, headers);
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.json.error).toMatchObject({ type: 'authentication_error', code: 'authentication_error' });
      }
    }
  });

  it('pages through every wallet in creation order, without gaps or repeats, across same-instant wallets', async () => {
    // Five wallets share one instant (the cursor must break ties by id), then four at later instants.
    for (let i = 0; i < 5; i++) await newWallet();
    for (let i = 0; i < 4; i++) {
      clock.advance(1000);
      await newWallet();
    }
    const expected = (await getDb().query<{ id: string }>('SELECT id FROM wallets ORDER BY created_at, id')).rows.map((r) => r.id);
    expect(expected.length).toBeGreaterThanOrEqual(10);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let madeBetweenPages: string | null = null;
    do {
      const res = await call('GET', `/admin/v1/wallets?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status, res.text).toBe(200);
      const page = res.json as Page;
      expect(page.data.length).toBeLessThanOrEqual(3);
      seen.push(...page.data.map((w) => w.id));
      expect(page.has_more).toBe(page.next_cursor !== null);
      cursor = page.next_cursor;
      pages++;
      // A wallet made while an operator pages shows up on a later page, being the newest.
      if (pages === 1) {
        clock.advance(1000);
        madeBetweenPages = (await newWallet()).id;
      }
    } while (cursor && pages < 50);

    expect(pages).toBeGreaterThan(2);
    expect(seen).toEqual([...expected, madeBetweenPages]);
    expect(new Set(seen).size).toBe(seen.length);

    // The default page is 50 and holds them all; limit=200 is allowed.
    const all = await call('GET', '/admin/v1/wallets');
    expect(all.json.data.map((w: { id: string }) => w.id)).toEqual(seen);
    expect(all.json).toMatchObject({ has_more: false, next_cursor: null });
    expect((await call('GET', '/admin/v1/wallets?limit=200')).status).toBe(200);
  });

  it('refuses a bad limit or cursor with 400 naming it, in the chat error shape', async () => {
    const forged = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const cases: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=99999999999999999999', 'limit'],
      ['cursor=not%20a%20cursor', 'cursor'],
      ['cursor=%00', 'cursor'],
      [`cursor=${forged({ a: 1 })}`, 'cursor'],
      [`cursor=${forged(['2026-13-45T99:00:00.000000Z', 'wal_x'])}`, 'cursor'],
      [`cursor=${forged(['2026-02-30T00:00:00.000000Z', 'wal_x'])}`, 'cursor'],
      [`cursor=${forged(['yesterday', 'wal_x'])}`, 'cursor'],
      // A real instant in JavaScript (1 BC), but out of PostgreSQL's range: once a 503.
      [`cursor=${forged(['0000-01-01T00:00:00.000000Z', 'wal_x'])}`, 'cursor'],
      [`cursor=${forged(['2026-05-01T00:00:00.000000Z', 'w\u0000'])}`, 'cursor'],
      [`cursor=${forged(['2026-05-01T00:00:00.000000Z', 7])}`, 'cursor'],
    ];
    for (const [query, param] of cases) {
      const res = await call('GET', `/admin/v1/wallets?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.json.error).toMatchObject({ type: 'invalid_request_error', param });
    }
  });

  it('shows general credits apart from vendor-restricted ones, keeping credits as the total', async () => {
    const w = await newWallet({ credits: 1000 });
    await call('POST', `/admin/v1/wallets/${w.id}/credits`, { credits: 700, vendors: ['c'] });
    await call('POST', `/admin/v1/wallets/${w.id}/credits`, { credits: 300, vendors: ['d', 'c'] });
    await call('POST', `/admin/v1/wallets/${w.id}/credits`, { credits: 100, vendors: ['c'] });
    const shown = (await call('GET', `/admin/v1/wallets/${w.id}`)).json;
    expect(shown).toMatchObject({
      credits: 2100,
      general_credits: 1000,
      restricted_credits: [
        { vendors: ['c'], credits: 800 },
        { vendors: ['c', 'd'], credits: 300 },
      ],
    });
    // A vendor C call draws from its restricted lots first: the restricted part shrinks, the general stays.
    const r = await ledger.reserve({ walletId: w.id, vendor: 'c', amountNano: 50_000n, callId: 'view' });
    expect(r.ok).toBe(true);
    const after = (await call('GET', `/admin/v1/wallets/${w.id}`)).json;
    expect(after.general_credits).toBe(1000);
    expect(after.credits).toBe(2050);
    const restrictedSum = after.restricted_credits.reduce((s: number, x: { credits: number }) => s + x.credits, 0);
    expect(restrictedSum).toBe(1050);
    // The listing shows each wallet the same way as GET /admin/v1/wallets/{id}.
    const listed = (await call('GET', '/admin/v1/wallets?limit=200')).json.data.find((x: { id: string }) => x.id === w.id);
    expect(listed).toEqual(after);
  });

  it('counts active API keys per wallet in the listing', async () => {
    const w = await newWallet();
    await keys.createApiKey(w.id, { name: 'one' });
    const two = await keys.createApiKey(w.id, { name: 'two' });
    await keys.closeKey(two.id);
    await keys.createApiKey(w.id, { name: 'three' });
    const listed = (await call('GET', '/admin/v1/wallets?limit=200')).json.data.find((x: { id: string }) => x.id === w.id);
    expect(listed.keys_active).toBe(2);
  });

  it('echoes the name, lists management keys without secrets, and a closed key stops working at once', async () => {
    const w = await newWallet({ owner_id: 'alice' });
    const made = await call('POST', `/admin/v1/wallets/${w.id}/management-keys`, { name: 'ops' });
    expect(made.status).toBe(201);
    expect(made.json).toEqual({ id: expect.any(String), key: expect.stringMatching(/^sk-svcm-/), name: 'ops' });
    const unnamed = await call('POST', `/admin/v1/wallets/${w.id}/management-keys`, {});
    expect(unnamed.json.name).toBeNull();

    const doors = { authorization: `Bearer ${made.json.key}` };
    expect((await call('GET', '/v1/keys', undefined, doors)).status).toBe(200);

    const listed = await call('GET', `/admin/v1/wallets/${w.id}/management-keys`);
    expect(listed.status).toBe(200);
    expect(listed.json.data.map((k: { id: string }) => k.id)).toEqual([made.json.id, unnamed.json.id]);
    expect(listed.json.data[0]).toMatchObject({
      object: 'management_key',
      name: 'ops',
      key_prefix: `${made.json.key.slice(0, 12)}…`,
      created_by: 'alice',
      status: 'active',
      closed_at: null,
      closed_reason: null,
    });
    expect(listed.text).not.toContain(made.json.key);
    expect(listed.text).not.toContain(unnamed.json.key);
    expect(listed.text).not.toMatch(/secret|hash/);

    const closed = await call('DELETE', `/admin/v1/wallets/${w.id}/management-keys/${made.json.id}`);
    expect(closed.status).toBe(200);
    expect(closed.json).toEqual({ id: made.json.id, object: 'management_key', closed: true });
    const refused = await call('GET', '/v1/keys', undefined, doors);
    expect(refused.status).toBe(401);
    expect(refused.json.error.type).toBe('authentication_error');
    // The other key still works, and the list shows which is which.
    expect((await call('GET', '/v1/keys', undefined, { authorization: `Bearer ${unnamed.json.key}` })).status).toBe(200);
    const after = (await call('GET', `/admin/v1/wallets/${w.id}/management-keys`)).json.data;
    expect(after.map((k: { status: string }) => k.status)).toEqual(['closed', 'active']);
    expect(after[0]).toMatchObject({ closed_reason: 'deleted', closed_at: expect.any(String) });

    // Closing twice, an unknown key, another wallet's key, or a normal API key: 404, nothing changes.
    const other = await newWallet();
    const othersKey = await call('POST', `/admin/v1/wallets/${other.id}/management-keys`, {});
    const apiKey = await keys.createApiKey(w.id, { name: 'normal' });
    for (const keyId of [made.json.id, 'key_nope', othersKey.json.id, apiKey.id]) {
      const res = await call('DELETE', `/admin/v1/wallets/${w.id}/management-keys/${keyId}`);
      expect(res.status, keyId).toBe(404);
      expect(res.json.error.type).toBe('not_found_error');
    }
    expect((await call('GET', '/v1/keys', undefined, { authorization: `Bearer ${othersKey.json.key}` })).status).toBe(200);

    // After an owner change the earlier owner's keys show as closed (owner_changed) and do not work.
    await call('POST', `/admin/v1/wallets/${w.id}/owner`, { owner_id: 'bob' });
    const afterOwner = (await call('GET', `/admin/v1/wallets/${w.id}/management-keys`)).json.data;
    expect(afterOwner[1]).toMatchObject({ id: unnamed.json.id, status: 'closed', closed_reason: 'owner_changed' });
    expect((await call('GET', '/v1/keys', undefined, { authorization: `Bearer ${unnamed.json.key}` })).status).toBe(401);
  });

  it('answers 404 for an unknown wallet on the management-key routes', async () => {
    for (const [method, path] of [
      ['GET', '/admin/v1/wallets/nope/management-keys'],
      ['DELETE', '/admin/v1/wallets/nope/management-keys/key_x'],
    ] as const) {
      const res = await call(method, path);
      expect(res.status, path).toBe(404);
      expect(res.json.error.type).toBe('not_found_error');
    }
  });
});
