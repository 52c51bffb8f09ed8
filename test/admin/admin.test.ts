import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerAdminRoutes } from '../../engine/admin/routes.ts';
import { adminCallFor } from '../../engine/cli/running-gateway-client.ts';
import { walletCreate, walletShow, walletTopup } from '../../engine/cli/wallet-commands.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { describeEachDatabase, openTestPglite } from '../helpers/databases.ts';
import { VENDORS } from '../helpers/vendors.ts';

const TOKEN = 'admin-secret-token';
const clock = fixedClock('2026-05-01T00:00:00Z');

async function buildApp(db: Db, adminToken: string | undefined) {
  const ledger = createLedger(db, { clock, vendors: () => VENDORS });
  const made: { walletId: string; name?: string | undefined }[] = [];
  const app = Fastify();
  await registerAdminRoutes(app, {
    ledger,
    db,
    adminToken,
    clock,
    createManagementKey: async (walletId, name) => {
      made.push({ walletId, name });
      return { id: `key_${made.length}`, key: `sk-svcm-test${made.length}` };
    },
    closeManagementKey: async () => false,
  });
  await app.ready();
  return { app, ledger, made };
}

const auth = { authorization: `Bearer ${TOKEN}` };

describeEachDatabase('admin API', (getDb) => {
  let app: FastifyInstance;
  let made: { walletId: string; name?: string | undefined }[];
  let ledger: ReturnType<typeof createLedger>;
  beforeAll(async () => {
    ({ app, made, ledger } = await buildApp(getDb(), TOKEN));
  });
  afterAll(() => app?.close());

  it('answers 401 without or with a wrong token', async () => {
    const none = await app.inject({ method: 'POST', url: '/admin/v1/wallets', payload: {} });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ error: { type: 'authentication_error', code: 'authentication_error' } });
    const wrong = await app.inject({ method: 'GET', url: '/admin/v1/wallets/x', headers: { authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(401);
  });

  it('creates a wallet, tops up, shows it', async () => {
    const c = await app.inject({
      method: 'POST',
      url: '/admin/v1/wallets',
      headers: auth,
      payload: { credits: 5000, splits_usage: true, key_slots: 3 },
    });
    expect(c.statusCode).toBe(201);
    const w = c.json();
    expect(w).toMatchObject({ credits: 5000, splits_usage: true, key_slots: 3 });
    expect(typeof w.id).toBe('string');

    const t = await app.inject({
      method: 'POST',
      url: `/admin/v1/wallets/${w.id}/credits`,
      headers: auth,
      payload: { credits: 700, vendors: ['c'] },
    });
    expect(t.statusCode).toBe(201);
    expect(t.json()).toMatchObject({ credits: 700, vendors: ['c'] });
    expect(typeof t.json().lot_id).toBe('string');

    // a reservation of 1.5 credits shows as 2 reserved credits, and the balance rounds down
    const r = await ledger.reserve({ walletId: w.id, vendor: 'a', amountNano: 1_500n, callId: 'x' });
    expect(r.ok).toBe(true);
    const g = await app.inject({ method: 'GET', url: `/admin/v1/wallets/${w.id}`, headers: auth });
    expect(g.statusCode).toBe(200);
    const shown = g.json();
    expect(shown).toMatchObject({ id: w.id, credits: 5698, reserved_credits: 2, key_slots: 3, keys_active: 0 });
    expect(shown.lots).toHaveLength(2);
    expect(shown.lots[1]).toMatchObject({ id: t.json().lot_id, vendors: ['c'], credits: 700 });

    const empty = await app.inject({ method: 'POST', url: '/admin/v1/wallets', headers: auth });
    expect(empty.statusCode).toBe(201);
    expect(empty.json()).toMatchObject({ credits: 0, splits_usage: false, key_slots: 100 });
  });

  it('validates bodies with 400 in the chat error shape', async () => {
    const cases: [string, unknown, string | null][] = [
      ['/admin/v1/wallets', { credits: -1 }, 'credits'],
      ['/admin/v1/wallets', { credits: 1.5 }, 'credits'],
      ['/admin/v1/wallets', { credits: 'ten' }, 'credits'],
      // Won are read only where billing.yaml sets a display currency (none here).
      ['/admin/v1/wallets', { credits: '₩7000' }, 'credits'],
      ['/admin/v1/wallets', { name: '' }, 'name'],
      ['/admin/v1/wallets', { name: 'a\nb' }, 'name'],
      ['/admin/v1/wallets', { name: 'x'.repeat(101) }, 'name'],
      ['/admin/v1/wallets', { key_slots: 'many' }, 'key_slots'],
      ['/admin/v1/wallets', { splits_usage: 'yes' }, 'splits_usage'],
      ['/admin/v1/wallets', { bogus: 1 }, 'bogus'],
      ['/admin/v1/wallets', [1, 2], null],
    ];
    for (const [url, payload, param] of cases) {
      const res = await app.inject({ method: 'POST', url, headers: auth, payload: payload as object });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      const body = res.json();
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.param).toBe(param);
      expect(body.error.message.length).toBeGreaterThan(5);
    }
    const w = (await app.inject({ method: 'POST', url: '/admin/v1/wallets', headers: auth, payload: {} })).json();
    for (const payload of [
      {},
      { credits: 0 },
      { credits: 10, vendors: ['z'] },
      { credits: 10, vendors: 'c' },
      { credits: 10, vendors: [] },
    ]) {
      const res = await app.inject({ method: 'POST', url: `/admin/v1/wallets/${w.id}/credits`, headers: auth, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    const bad = await app.inject({
      method: 'POST',
      url: '/admin/v1/wallets',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.type).toBe('invalid_request_error');
  });

  it("names a lot at its top-up: a term's budget reads by its name in every view and in the trail", async () => {
    const w = (await app.inject({ method: 'POST', url: '/admin/v1/wallets', headers: auth, payload: {} })).json();
    const topUp = (payload: object) => app.inject({ method: 'POST', url: `/admin/v1/wallets/${w.id}/credits`, headers: auth, payload });
    const named = await topUp({ credits: 700, expires_at: '2027-03-01T00:00:00+09:00', label: '  2026 2학기 ' });
    expect(named.statusCode).toBe(201);
    expect(named.json()).toMatchObject({ credits: 700, label: '2026 2학기' });
    expect((await topUp({ credits: 5 })).json().label).toBeNull();
    for (const label of ['', '   ', 'x'.repeat(41), 7]) {
      const res = await topUp({ credits: 10, label });
      expect(res.statusCode, JSON.stringify(label)).toBe(400);
      expect(res.json().error.param).toBe('label');
    }
    const shown = (await app.inject({ method: 'GET', url: `/admin/v1/wallets/${w.id}`, headers: auth })).json();
    expect(shown.credits).toBe(705); // the refused top-ups added nothing
    expect(shown.lots.map((l: { label: string | null }) => l.label)).toEqual(['2026 2학기', null]);
    const trail = await getDb().query<{ after: { label?: string } }>(
      `SELECT after FROM wallet_audit WHERE wallet_id = $1 AND action = 'credits.added' ORDER BY seq`,
      [w.id],
    );
    expect(trail.rows.map((r) => r.after.label ?? null)).toEqual(['2026 2학기', null]);
    // The operator's command names it the same way.
    const viaCli = await walletTopup(getDb(), w.id, { credits: 3, label: '2027 1학기' }, { clock });
    expect(viaCli.label).toBe('2027 1학기');
  });

  it('404 for unknown wallets', async () => {
    for (const [method, url, payload] of [
      ['GET', '/admin/v1/wallets/nope', null],
      ['POST', '/admin/v1/wallets/nope/credits', { credits: 1 }],
      ['POST', '/admin/v1/wallets/nope/management-keys', {}],
      ['POST', '/admin/v1/wallets/nope/owner', { owner_id: 'x' }],
    ] as const) {
      const res = await app.inject({ method, url, headers: auth, ...(payload ? { payload } : {}) });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.type).toBe('not_found_error');
    }
  });

  it('creates management keys through the key service and changes the owner', async () => {
    const w = (await app.inject({ method: 'POST', url: '/admin/v1/wallets', headers: auth, payload: { owner_id: 'alice' } })).json();
    expect(w.owner_id).toBe('alice');
    const k = await app.inject({
      method: 'POST',
      url: `/admin/v1/wallets/${w.id}/management-keys`,
      headers: auth,
      payload: { name: 'ops' },
    });
    expect(k.statusCode).toBe(201);
    expect(k.json()).toEqual({ id: expect.any(String), key: expect.stringMatching(/^sk-svcm-/), name: 'ops' });
    expect(made.at(-1)).toEqual({ walletId: w.id, name: 'ops' });
    const long = await app.inject({
      method: 'POST',
      url: `/admin/v1/wallets/${w.id}/management-keys`,
      headers: auth,
      payload: { name: 'x'.repeat(41) },
    });
    expect(long.statusCode).toBe(400);

    const o = await app.inject({ method: 'POST', url: `/admin/v1/wallets/${w.id}/owner`, headers: auth, payload: { owner_id: 'bob' } });
    expect(o.statusCode).toBe(200);
    expect(o.json()).toEqual({ id: w.id, owner_id: 'bob', closed_management_keys: [] });
    expect((await ledger.getWallet(w.id))?.ownerId).toBe('bob');
    const missing = await app.inject({ method: 'POST', url: `/admin/v1/wallets/${w.id}/owner`, headers: auth, payload: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.param).toBe('owner_id');
  });

  it('counts active keys from api_keys', async () => {
    const db = getDb();
    const w = (await app.inject({ method: 'POST', url: '/admin/v1/wallets', headers: auth, payload: {} })).json();
    const hasKeys = (await db.query<{ t: string | null }>(`SELECT to_regclass('api_keys')::text AS t`)).rows[0]!.t;
    if (!hasKeys) return; // 002_keys.sql not there yet
    const ins = (id: string, closed: boolean) =>
      db.query(
        `INSERT INTO api_keys (id, wallet_id, kind, secret_hash, key_prefix, closed_at) VALUES ($1, $2, 'api', $3, 'sk-svc-x…', $4)`,
        [id, w.id, `hash-${id}`, closed ? new Date().toISOString() : null],
      );
    await ins(`${w.id}-k1`, false);
    await ins(`${w.id}-k2`, false);
    await ins(`${w.id}-k3`, true);
    const g = await app.inject({ method: 'GET', url: `/admin/v1/wallets/${w.id}`, headers: auth });
    expect(g.json().keys_active).toBe(2);
  });

  it('CLI functions create, top up and show', async () => {
    const db = getDb();
    const w = await walletCreate(db, { credits: '25', keySlots: '4', splitsUsage: true }, { clock });
    expect(w).toMatchObject({ credits: 25, key_slots: 4, splits_usage: true });
    const lot = await walletTopup(db, w.id, { credits: '10', vendors: 'c' }, { clock });
    expect(lot).toMatchObject({ credits: 10, vendors: ['c'] });
    const shown = await walletShow(db, w.id, { clock });
    expect(shown).toMatchObject({ id: w.id, credits: 35, reserved_credits: 0, key_slots: 4, keys_active: 0 });
    expect(shown.lots).toHaveLength(2);
    await expect(walletShow(db, 'nope')).rejects.toMatchObject({ status: 404 });
    await expect(walletTopup(db, w.id, { credits: 'x' })).rejects.toMatchObject({ status: 400 });
  });

  it('the CLI top-up takes --expires-at as the admin API does, and show lists each lot with its expiry', async () => {
    const db = getDb();
    const w = await walletCreate(db, { credits: '5' }, { clock });
    const until = new Date(clock.now().getTime() + 30 * 86_400_000).toISOString();
    const lot = await walletTopup(db, w.id, { credits: '10', expiresAt: until }, { clock });
    expect(lot).toMatchObject({ credits: 10, expires_at: until });
    const shown = await walletShow(db, w.id, { clock });
    expect(shown.lots.map((l) => l.expires_at)).toEqual([null, until]);
    for (const bad of [clock.now().toISOString(), 'end of term'])
      await expect(walletTopup(db, w.id, { credits: '1', expiresAt: bad }, { clock })).rejects.toMatchObject({
        status: 400,
        param: 'expires_at',
      });
    expect(adminCallFor('wallet', 'topup', [w.id], { credits: '10', 'expires-at': until }).body).toMatchObject({ expires_at: until });
  });
});

describe('admin API without a token', () => {
  let db: Db;
  let app: FastifyInstance;
  beforeAll(async () => {
    db = await openTestPglite();
    ({ app } = await buildApp(db, undefined));
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });
  it('answers 404 for every admin route', async () => {
    for (const [method, url] of [
      ['POST', '/admin/v1/wallets'],
      ['GET', '/admin/v1/wallets/x'],
      ['POST', '/admin/v1/wallets/x/credits'],
      ['POST', '/admin/v1/wallets/x/management-keys'],
      ['POST', '/admin/v1/wallets/x/owner'],
    ] as const) {
      const res = await app.inject({ method, url, headers: auth, payload: {} });
      expect(res.statusCode, url).toBe(404);
    }
  });
});

describe('admin API over real HTTP', () => {
  let db: Db;
  let app: FastifyInstance;
  beforeAll(async () => {
    db = await openTestPglite();
    ({ app } = await buildApp(db, TOKEN));
    await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });
  it('creates and reads a wallet', async () => {
    const addr = app.server.address();
    const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const c = await fetch(`${base}/admin/v1/wallets`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ credits: 42 }),
    });
    expect(c.status).toBe(201);
    const w = (await c.json()) as { id: string };
    const g = await fetch(`${base}/admin/v1/wallets/${w.id}`, { headers: auth });
    expect(g.status).toBe(200);
    expect(await g.json()).toMatchObject({ id: w.id, credits: 42, reserved_credits: 0 });
    const u = await fetch(`${base}/admin/v1/wallets/${w.id}`, { headers: { authorization: 'Bearer wrong' } });
    expect(u.status).toBe(401);
  });
});
