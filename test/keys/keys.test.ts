// The key-management doors (GET/POST /v1/keys, GET/PATCH/DELETE /v1/keys/{id}) against PGlite and PostgreSQL.
import Fastify, { type FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db, Queryable } from '../../engine/db/db.ts';
import { createKeyService, hashSecret, type KeyService, registerKeyRoutes } from '../../engine/keys/index.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { makeWallet, useKeyDoors } from '../helpers/key-doors.ts';

const RECORD_FIELDS = [
  'audience',
  'created_at',
  'daily_limit_credits',
  'day_used_credits',
  'expires_at',
  'group_id',
  'id',
  'key_prefix',
  'last_used_at',
  'models',
  'month_used_credits',
  'monthly_limit_credits',
  'name',
  'object',
  'usable_until',
].sort();

describeEachDatabase('key doors', (getDb, kind) => {
  // 2026-03-10 12:00 KST
  const clock = fixedClock('2026-03-10T03:00:00Z');
  const fixture = useKeyDoors(getDb, clock);
  let db: Db;
  let keys: KeyService;
  let app: FastifyInstance;
  beforeAll(() => {
    ({ db, keys, app } = fixture);
  });

  async function setup(opts: { splits?: boolean; slots?: number } = {}) {
    const walletId = await makeWallet(db, opts);
    const mgmt = await keys.createManagementKey(walletId, 'ops');
    const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, key = mgmt.key) => {
      const res = await app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${key}` },
        ...(payload === undefined ? {} : { payload: payload as object }),
      });
      return { status: res.statusCode, body: res.body ? res.json() : undefined };
    };
    return { walletId, mgmt, call };
  }

  const activeCount = async (walletId: string) =>
    Number(
      (
        await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM api_keys WHERE wallet_id = $1 AND kind = 'api' AND NOT is_chat_key AND closed_at IS NULL`,
          [walletId],
        )
      ).rows[0]!.n,
    );

  describe('authentication', () => {
    it('refuses a missing key, a normal key and an unknown key with 401 authentication_error', async () => {
      const { walletId, call } = await setup();
      const normal = await keys.createApiKey(walletId);
      const missing = await app.inject({ method: 'GET', url: '/v1/keys' });
      expect(missing.statusCode).toBe(401);
      expect(missing.json().error.type).toBe('authentication_error');
      expect(missing.json().error.message).toContain('Authorization: Bearer');
      for (const key of [normal.key, 'sk-svcm-nope', 'garbage']) {
        for (const [method, url] of [
          ['GET', '/v1/keys'],
          ['POST', '/v1/keys'],
          ['GET', '/v1/keys/x'],
          ['PATCH', '/v1/keys/x'],
          ['DELETE', '/v1/keys/x'],
        ] as const) {
          const r = await call(method, url, method === 'POST' || method === 'PATCH' ? {} : undefined, key);
          expect(r.status, `${method} ${url} with ${key.slice(0, 8)}`).toBe(401);
          expect(r.body.error).toMatchObject({ type: 'authentication_error', code: 'authentication_error' });
        }
      }
    });

    it('answers errors in the chat shape', async () => {
      const { call } = await setup();
      const r = await call('POST', '/v1/keys', { monthly_limit: 5 });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({
        error: {
          type: 'invalid_request_error',
          code: 'invalid_request_error',
          param: 'monthly_limit',
          message: expect.stringContaining('monthly_limit'),
        },
      });
    });

    it('refuses malformed JSON with 400', async () => {
      const { mgmt } = await setup();
      const res = await app.inject({
        method: 'POST',
        url: '/v1/keys',
        headers: { authorization: `Bearer ${mgmt.key}`, 'content-type': 'application/json' },
        payload: '{"count":',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.type).toBe('invalid_request_error');
    });
  });

  describe('create', () => {
    it('creates one key, shows its full text once, and the key works', async () => {
      const { walletId, call } = await setup();
      const r = await call('POST', '/v1/keys', { name: 'lab laptop' });
      expect(r.status).toBe(201);
      expect(r.body.object).toBe('list');
      expect(r.body.data).toHaveLength(1);
      const rec = r.body.data[0];
      expect(Object.keys(rec).sort()).toEqual([...RECORD_FIELDS, 'key'].sort());
      expect(rec).toMatchObject({
        object: 'api_key',
        name: 'lab laptop',
        audience: null,
        monthly_limit_credits: null,
        month_used_credits: 0,
        daily_limit_credits: null,
        day_used_credits: 0,
        expires_at: null,
        usable_until: null,
        created_at: '2026-03-10T03:00:00.000Z',
        last_used_at: null,
      });
      expect(rec.id).toMatch(/^key_/);
      expect(rec.key).toMatch(/^sk-svc-[0-9A-Za-z]{32,}$/);
      expect(rec.key_prefix).toBe(`${rec.key.slice(0, 12)}…`);

      const auth = await keys.authenticate(rec.key, 'api');
      expect(auth).toMatchObject({ keyId: rec.id, walletId, kind: 'api' });

      // Never again: list, get, patch.
      const list = await call('GET', '/v1/keys');
      expect(list.body.data[0]).not.toHaveProperty('key');
      expect(Object.keys(list.body.data[0]).sort()).toEqual(RECORD_FIELDS);
      const got = await call('GET', `/v1/keys/${rec.id}`);
      expect(got.status).toBe(200);
      expect(got.body).not.toHaveProperty('key');
      const patched = await call('PATCH', `/v1/keys/${rec.id}`, { name: 'renamed' });
      expect(patched.body).not.toHaveProperty('key');
      expect(JSON.stringify([list.body, got.body, patched.body])).not.toContain(rec.key);

      // Only the hash is stored.
      const stored = await db.query(`SELECT * FROM api_keys WHERE id = $1`, [rec.id]);
      expect(JSON.stringify(stored.rows)).not.toContain(rec.key);
      expect(stored.rows[0]!.secret_hash).toBe(hashSecret(rec.key));
    });

    it('numbers names of a batch and lists newest first', async () => {
      const { call } = await setup();
      const r = await call('POST', '/v1/keys', { count: 3, name_prefix: 'lab' });
      expect(r.status).toBe(201);
      expect(r.body.data.map((k: { name: string }) => k.name)).toEqual(['lab 1', 'lab 2', 'lab 3']);
      const keysText = new Set(r.body.data.map((k: { key: string }) => k.key));
      expect(keysText.size).toBe(3);
      const list = await call('GET', '/v1/keys');
      expect(list.body.data.map((k: { name: string }) => k.name)).toEqual(['lab 3', 'lab 2', 'lab 1']);
      expect(list.body).toMatchObject({ object: 'list', total: 3, has_more: false });

      const viaName = await call('POST', '/v1/keys', { count: 2, name: 'pc' });
      expect(viaName.body.data.map((k: { name: string }) => k.name)).toEqual(['pc 1', 'pc 2']);
      const both = await call('POST', '/v1/keys', { count: 2, name: 'pc', name_prefix: 'room' });
      expect(both.body.data.map((k: { name: string }) => k.name)).toEqual(['room 1', 'room 2']);
      const single = await call('POST', '/v1/keys', { name_prefix: 'solo' });
      expect(single.body.data[0].name).toBe('solo');
      const singleBoth = await call('POST', '/v1/keys', { name: 'exact', name_prefix: 'solo' });
      expect(singleBoth.body.data[0].name).toBe('exact');
      const none = await call('POST', '/v1/keys', { count: 2 });
      expect(none.body.data.map((k: { name: string | null }) => k.name)).toEqual([null, null]);
    });

    it('checks count, name, name_prefix and unknown fields', async () => {
      const { walletId, call } = await setup();
      const bad: [unknown, string][] = [
        [{ count: 0 }, 'count'],
        [{ count: 101 }, 'count'],
        [{ count: 1.5 }, 'count'],
        [{ count: '2' }, 'count'],
        [{ name: 'x'.repeat(41) }, 'name'],
        [{ name: '' }, 'name'],
        [{ name: 7 }, 'name'],
        [{ name_prefix: 'x'.repeat(21) }, 'name_prefix'],
        [{ name: '채팅 · 민수' }, 'name'],
        [{ name_prefix: '채팅 · ' }, 'name_prefix'],
        [{ monthly_limit: 10 }, 'monthly_limit'],
        [{ expires_at: '2026-04-01' }, 'expires_at'],
        [{ key: 'x' }, 'key'],
        [{ audience: 'parent' }, 'audience'],
        [{ monthly_limit_credits: -1 }, 'monthly_limit_credits'],
        [{ monthly_limit_credits: 1.5 }, 'monthly_limit_credits'],
        [{ daily_limit_credits: '5' }, 'daily_limit_credits'],
        [{ expires_on: '2026-02-30' }, 'expires_on'],
        [{ expires_on: '10/03/2026' }, 'expires_on'],
        [{ count: 2, name: 'x'.repeat(40) }, 'name'],
      ];
      for (const [body, param] of bad) {
        const r = await call('POST', '/v1/keys', body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.error.type).toBe('invalid_request_error');
        expect(r.body.error.param, JSON.stringify(body)).toBe(param);
      }
      const unknown = await call('POST', '/v1/keys', { monthly_limit: 10 });
      expect(unknown.body.error.message).toContain("'monthly_limit'");
      expect(await activeCount(walletId)).toBe(0);
      // Edge values that are fine.
      expect((await call('POST', '/v1/keys', { name: 'ㄱ'.repeat(40), name_prefix: 'p'.repeat(20) })).status).toBe(201);
      expect((await call('POST', '/v1/keys', { name: '채팅하는 키' })).status).toBe(201);
      const big = await setup({ slots: 100 });
      const hundred = await big.call('POST', '/v1/keys', { count: 100, name_prefix: 'p'.repeat(20) });
      expect(hundred.status).toBe(201);
      expect(hundred.body.data).toHaveLength(100);
      expect(hundred.body.data[99].name).toBe(`${'p'.repeat(20)} 100`);
    });

    it('audience: student needs a wallet that splits usage', async () => {
      const plain = await setup();
      const r = await plain.call('POST', '/v1/keys', { audience: 'student' });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param: 'audience' });
      expect(r.body.error.message, 'says how to get such a wallet').toContain('wallet create --splits-usage');
      const teacher = await plain.call('POST', '/v1/keys', { audience: 'teacher' });
      expect(teacher.status).toBe(201);
      expect(teacher.body.data[0].audience).toBeNull();

      const school = await setup({ splits: true });
      const s = await school.call('POST', '/v1/keys', { audience: 'student' });
      expect(s.body.data[0].audience).toBe('student');
      const t = await school.call('POST', '/v1/keys', { audience: 'teacher' });
      expect(t.body.data[0].audience).toBe('teacher');
      const d = await school.call('POST', '/v1/keys', {});
      expect(d.body.data[0].audience).toBe('student');
      const auth = await keys.authenticate(s.body.data[0].key, 'api');
      expect(auth.audience).toBe('student');
    });

    it('limits: daily must not exceed monthly', async () => {
      const { call } = await setup();
      const r = await call('POST', '/v1/keys', { monthly_limit_credits: 100, daily_limit_credits: 101 });
      expect(r.status).toBe(400);
      expect(r.body.error.param).toBe('daily_limit_credits');
      const ok = await call('POST', '/v1/keys', { monthly_limit_credits: 100, daily_limit_credits: 100 });
      expect(ok.status).toBe(201);
      expect(ok.body.data[0]).toMatchObject({ monthly_limit_credits: 100, daily_limit_credits: 100 });
      const dailyOnly = await call('POST', '/v1/keys', { daily_limit_credits: 5, monthly_limit_credits: null });
      expect(dailyOnly.body.data[0]).toMatchObject({ monthly_limit_credits: null, daily_limit_credits: 5 });
    });

    it('expires_on: Korean today is fine, Korean yesterday is refused; expires_at is 00:00 KST next day', async () => {
      const { call } = await setup();
      const saved = clock.now();
      try {
        clock.set('2026-03-09T15:30:00Z'); // 2026-03-10 00:30 KST; UTC still says the 9th
        const y = await call('POST', '/v1/keys', { expires_on: '2026-03-09' });
        expect(y.status).toBe(400);
        expect(y.body.error.param).toBe('expires_on');
        const t = await call('POST', '/v1/keys', { expires_on: '2026-03-10' });
        expect(t.status).toBe(201);
        expect(t.body.data[0]).toMatchObject({ usable_until: '2026-03-10', expires_at: '2026-03-10T15:00:00.000Z' });
        const e = await call('POST', '/v1/keys', { expires_on: '2026-12-31' });
        expect(e.body.data[0]).toMatchObject({ usable_until: '2026-12-31', expires_at: '2026-12-31T15:00:00.000Z' });
      } finally {
        clock.set(saved);
      }
    });

    it('refuses a count larger than the free slots with 400 and makes no key; chat keys take no slot', async () => {
      const { walletId, call } = await setup({ slots: 3 });
      await keys.createApiKey(walletId, { isChatKey: true, name: '채팅 · 민수' });
      await keys.createApiKey(walletId, { isChatKey: true, name: '채팅 · 지우' });
      expect((await call('POST', '/v1/keys', { count: 2 })).status).toBe(201);
      const r = await call('POST', '/v1/keys', { count: 2 });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param: 'count' });
      expect(await activeCount(walletId)).toBe(2);
      expect((await call('POST', '/v1/keys', { count: 1 })).status).toBe(201);
      expect((await call('POST', '/v1/keys', {})).status).toBe(400);
      // A closed key frees its slot.
      const list = await call('GET', '/v1/keys');
      expect((await call('DELETE', `/v1/keys/${list.body.data[0].id}`)).status).toBe(200);
      expect((await call('POST', '/v1/keys', {})).status).toBe(201);
    });

    it('a race past the slots leaves no more active keys than slots; losers get 409 and their keys are closed', async () => {
      const slots = 10;
      const { walletId, call } = await setup({ slots });
      const results = await Promise.all(Array.from({ length: 12 }, () => call('POST', '/v1/keys', { count: 4, name_prefix: 'r' })));
      const statuses = results.map((r) => r.status);
      if (process.env.KEYS_DEBUG) console.log(kind, statuses.join(','));
      expect(
        statuses.every((s) => s === 201 || s === 409 || s === 400),
        statuses.join(','),
      ).toBe(true);
      const active = await activeCount(walletId);
      expect(active).toBeLessThanOrEqual(slots);
      const won = results.filter((r) => r.status === 201).flatMap((r) => r.body.data as { id: string; key: string }[]);
      expect(active).toBe(won.length);
      for (const r of results.filter((x) => x.status === 409)) {
        expect(r.body.error.type).toBe('conflict_error');
        expect(r.body.error.message).toContain('closed');
        for (const id of r.body.error.closed_key_ids) {
          const row = (
            await db.query<{ closed_at: Date | null; closed_reason: string }>(
              `SELECT closed_at, closed_reason FROM api_keys WHERE id = $1`,
              [id],
            )
          ).rows[0]!;
          expect(row.closed_at).not.toBeNull();
          expect(row.closed_reason).toBe('slot_race');
        }
        expect(r.body.error.closed_key_ids).toHaveLength(4);
      }
      // Keys of winners work; closed keys of losers do not.
      for (const k of won) await expect(keys.authenticate(k.key, 'api')).resolves.toMatchObject({ keyId: k.id });
      if (kind === 'postgres')
        expect(statuses.filter((s) => s === 409).length + statuses.filter((s) => s === 400).length).toBeGreaterThan(0);
    });

    it("a forced race (every request passes the slot pre-check before any insert) closes the losers' keys with 409", async () => {
      // All requests wait at the unlocked pre-check until every one has reached it, so all see free slots.
      const n = 6;
      let waiting = 0;
      let release!: () => void;
      const barrier = new Promise<void>((r) => (release = r));
      const gated: Db = {
        kind: db.kind,
        query: async (sql: string, params?: unknown[]) => {
          if (/^SELECT count\(\*\)::text AS n FROM api_keys/.test(sql)) {
            const res = await db.query(sql, params);
            if (++waiting === n) release();
            await barrier;
            return res as never;
          }
          return db.query(sql, params) as never;
        },
        transaction: (fn) => db.transaction(fn),
        listen: (c, f) => db.listen(c, f),
        notify: (c, p) => db.notify(c, p),
        close: async () => undefined,
      };
      const app2 = Fastify();
      await registerKeyRoutes(app2, { keys, db: gated, clock });
      try {
        const slots = 5;
        const walletId = await makeWallet(db, { slots });
        const mgmt = await keys.createManagementKey(walletId);
        const results = await Promise.all(
          Array.from({ length: n }, () =>
            app2.inject({ method: 'POST', url: '/v1/keys', headers: { authorization: `Bearer ${mgmt.key}` }, payload: { count: 2 } }),
          ),
        );
        const statuses = results.map((r) => r.statusCode);
        expect(
          statuses.every((s) => s === 201 || s === 409),
          statuses.join(','),
        ).toBe(true);
        expect(statuses.filter((s) => s === 409).length).toBeGreaterThanOrEqual(4); // 6 × 2 keys for 5 slots: at most 2 winners
        const winners = statuses.filter((s) => s === 201).length;
        expect(await activeCount(walletId)).toBe(winners * 2);
        expect(await activeCount(walletId)).toBeLessThanOrEqual(slots);
        const loser = results.find((r) => r.statusCode === 409)!;
        expect(loser.json().error).toMatchObject({ type: 'conflict_error', code: 'conflict_error' });
      } finally {
        await app2.close();
      }
    });

    it('many concurrent single creates never exceed the slots', async () => {
      const slots = 5;
      const { walletId, call } = await setup({ slots });
      const results = await Promise.all(Array.from({ length: 20 }, () => call('POST', '/v1/keys', {})));
      expect(await activeCount(walletId)).toBeLessThanOrEqual(slots);
      expect(await activeCount(walletId)).toBe(results.filter((r) => r.status === 201).length);
      expect(results.filter((r) => r.status === 201).length).toBeGreaterThan(0);
    });
  });

  describe('list', () => {
    it('pages with limit and offset, counts total and has_more, checks the query', async () => {
      const { call } = await setup();
      await call('POST', '/v1/keys', { count: 5, name_prefix: 'k' });
      const p1 = await call('GET', '/v1/keys?limit=2');
      expect(p1.body).toMatchObject({ object: 'list', total: 5, has_more: true });
      expect(p1.body.data.map((k: { name: string }) => k.name)).toEqual(['k 5', 'k 4']);
      const p3 = await call('GET', '/v1/keys?limit=2&offset=4');
      expect(p3.body).toMatchObject({ total: 5, has_more: false });
      expect(p3.body.data.map((k: { name: string }) => k.name)).toEqual(['k 1']);
      const beyond = await call('GET', '/v1/keys?offset=50');
      expect(beyond.body).toMatchObject({ data: [], total: 5, has_more: false });
      expect((await call('GET', '/v1/keys?limit=500')).status).toBe(200);
      for (const q of ['limit=0', 'limit=501', 'limit=x', 'offset=-1', 'limit=1.5']) {
        const r = await call('GET', `/v1/keys?${q}`);
        expect(r.status, q).toBe(400);
        expect(r.body.error.type).toBe('invalid_request_error');
      }
    });

    it('shows only active normal keys of the wallet: no chat, closed, expired, management or other-wallet keys', async () => {
      const { walletId, call } = await setup();
      const other = await setup();
      await other.call('POST', '/v1/keys', { name: 'theirs' });
      await keys.createApiKey(walletId, { isChatKey: true, name: '채팅 · 민수' });
      const made = await call('POST', '/v1/keys', { count: 3, name_prefix: 'm' });
      await call('DELETE', `/v1/keys/${made.body.data[0].id}`);
      await call('PATCH', `/v1/keys/${made.body.data[1].id}`, { expires_on: '2026-03-10' });
      let list = await call('GET', '/v1/keys');
      expect(list.body.data.map((k: { name: string }) => k.name)).toEqual(['m 3', 'm 2']);
      const saved = clock.now();
      try {
        clock.set('2026-03-10T15:00:00Z'); // 00:00 KST on the 11th: m 2 has closed by time
        list = await call('GET', '/v1/keys');
        expect(list.body.data.map((k: { name: string }) => k.name)).toEqual(['m 3']);
        expect(list.body.total).toBe(1);
        expect((await call('GET', `/v1/keys/${made.body.data[1].id}`)).status).toBe(404);
      } finally {
        clock.set(saved);
      }
    });
  });

  describe('get, patch, delete', () => {
    it("answers 404 for another wallet's key, a closed key, a chat key, a management key and an unknown id", async () => {
      const mine = await setup();
      const other = await setup();
      const theirs = (await other.call('POST', '/v1/keys', {})).body.data[0].id;
      const chat = await keys.createApiKey(mine.walletId, { isChatKey: true, name: '채팅 · 민수' });
      const closed = (await mine.call('POST', '/v1/keys', {})).body.data[0].id;
      expect((await mine.call('DELETE', `/v1/keys/${closed}`)).status).toBe(200);
      for (const id of [theirs, chat.id, closed, mine.mgmt.id, 'key_nope']) {
        for (const [method, body] of [
          ['GET', undefined],
          ['PATCH', { name: 'x' }],
          ['DELETE', undefined],
        ] as const) {
          const r = await mine.call(method, `/v1/keys/${id}`, body);
          expect(r.status, `${method} ${id}`).toBe(404);
          // interface.md's error table: "404 model_not_found … Also key id not found on key doors".
          expect(r.body.error.type).toBe('model_not_found');
        }
      }
      // Nothing changed on the other wallet's key.
      expect((await other.call('GET', `/v1/keys/${theirs}`)).body.name).toBeNull();
    });

    it('PATCH changes only the fields sent; null clears', async () => {
      const { call } = await setup();
      const rec = (
        await call('POST', '/v1/keys', { name: 'a', monthly_limit_credits: 100, daily_limit_credits: 10, expires_on: '2026-04-01' })
      ).body.data[0];
      let r = await call('PATCH', `/v1/keys/${rec.id}`, { monthly_limit_credits: 200 });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        name: 'a',
        monthly_limit_credits: 200,
        daily_limit_credits: 10,
        usable_until: '2026-04-01',
        object: 'api_key',
        id: rec.id,
      });
      r = await call('PATCH', `/v1/keys/${rec.id}`, { daily_limit_credits: null, expires_on: null, name: null });
      expect(r.body).toMatchObject({
        name: null,
        monthly_limit_credits: 200,
        daily_limit_credits: null,
        usable_until: null,
        expires_at: null,
      });
      r = await call('PATCH', `/v1/keys/${rec.id}`, {});
      expect(r.status).toBe(200);
      expect(r.body.monthly_limit_credits).toBe(200);
      r = await call('PATCH', `/v1/keys/${rec.id}`, { monthly_limit_credits: null });
      expect(r.body.monthly_limit_credits).toBeNull();
      r = await call('PATCH', `/v1/keys/${rec.id}`, { name: 'b', expires_on: '2026-03-10' });
      expect(r.body).toMatchObject({ name: 'b', usable_until: '2026-03-10', expires_at: '2026-03-10T15:00:00.000Z' });
    });

    it('PATCH checks its fields', async () => {
      const { call } = await setup();
      const rec = (await call('POST', '/v1/keys', { monthly_limit_credits: 100 })).body.data[0];
      const bad: [unknown, string][] = [
        [{ daily_limit_credits: 101 }, 'daily_limit_credits'],
        [{ count: 2 }, 'count'],
        [{ name_prefix: 'x' }, 'name_prefix'],
        [{ monthly_limit: 1 }, 'monthly_limit'],
        [{ expires_at: null }, 'expires_at'],
        [{ expires_on: '2026-03-09' }, 'expires_on'],
        [{ name: '채팅 · 민수' }, 'name'],
        [{ name: 'x'.repeat(41) }, 'name'],
        [{ audience: 'student' }, 'audience'],
      ];
      for (const [body, param] of bad) {
        const r = await call('PATCH', `/v1/keys/${rec.id}`, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param });
      }
      // Lowering monthly below the daily limit is refused too.
      await call('PATCH', `/v1/keys/${rec.id}`, { daily_limit_credits: 50 });
      const r = await call('PATCH', `/v1/keys/${rec.id}`, { monthly_limit_credits: 40 });
      expect(r.status).toBe(400);
      const unchanged = await call('GET', `/v1/keys/${rec.id}`);
      expect(unchanged.body).toMatchObject({ monthly_limit_credits: 100, daily_limit_credits: 50 });
    });

    it('PATCH audience on a wallet that splits usage', async () => {
      const { call } = await setup({ splits: true });
      const rec = (await call('POST', '/v1/keys', { audience: 'student' })).body.data[0];
      const r = await call('PATCH', `/v1/keys/${rec.id}`, { audience: 'teacher' });
      expect(r.body.audience).toBe('teacher');
      expect((await keys.authenticate(rec.key, 'api')).audience).toBe('teacher');
      expect((await call('PATCH', `/v1/keys/${rec.id}`, { audience: null })).status).toBe(400);
    });

    it('a PATCH reaches authentication at once (limits are not cached stale)', async () => {
      const { call } = await setup();
      const rec = (await call('POST', '/v1/keys', {})).body.data[0];
      expect((await keys.authenticate(rec.key, 'api')).monthlyLimitNano).toBeNull();
      await call('PATCH', `/v1/keys/${rec.id}`, { monthly_limit_credits: 7 });
      expect((await keys.authenticate(rec.key, 'api')).monthlyLimitNano).toBe(7000n);
    });

    it('DELETE closes the key at once and for good', async () => {
      const { call } = await setup();
      const rec = (await call('POST', '/v1/keys', {})).body.data[0];
      await keys.authenticate(rec.key, 'api'); // now cached
      const r = await call('DELETE', `/v1/keys/${rec.id}`);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ id: rec.id, object: 'api_key', deleted: true });
      await expect(keys.authenticate(rec.key, 'api')).rejects.toMatchObject({ status: 401, type: 'authentication_error' });
      expect((await call('DELETE', `/v1/keys/${rec.id}`)).status).toBe(404);
      expect((await call('PATCH', `/v1/keys/${rec.id}`, { expires_on: null })).status).toBe(404);
      await expect(keys.authenticate(rec.key, 'api')).rejects.toMatchObject({ status: 401 });
    });

    it('DELETE accepts an empty JSON body', async () => {
      const { mgmt, call } = await setup();
      const rec = (await call('POST', '/v1/keys', {})).body.data[0];
      const res = await app.inject({
        method: 'DELETE',
        url: `/v1/keys/${rec.id}`,
        headers: { authorization: `Bearer ${mgmt.key}`, 'content-type': 'application/json' },
      });
      expect(res.statusCode).toBe(200);
    });

    it('records show usage and last use', async () => {
      const { call } = await setup();
      const rec = (await call('POST', '/v1/keys', {})).body.data[0];
      await keys.authenticate(rec.key, 'api');
      await keys.quota.recordUsage(rec.id, 1_500n, clock.now());
      const r = await call('GET', `/v1/keys/${rec.id}`);
      expect(r.body).toMatchObject({ month_used_credits: 2, day_used_credits: 2, last_used_at: '2026-03-10T03:00:00.000Z' });
      await keys.flushLastUsed();
      const row = (await db.query<{ last_used_at: Date }>('SELECT last_used_at FROM api_keys WHERE id = $1', [rec.id])).rows[0]!;
      expect(new Date(row.last_used_at).toISOString()).toBe('2026-03-10T03:00:00.000Z');
    });
  });

  describe('management key ownership', () => {
    it('closes itself when its creator is no longer the wallet owner, and stays closed', async () => {
      const { walletId, call } = await setup();
      expect((await call('GET', '/v1/keys')).status).toBe(200);
      await db.query(`UPDATE wallets SET owner_id = 'owner-2' WHERE id = $1`, [walletId]);
      const r = await call('GET', '/v1/keys');
      expect(r.status).toBe(401);
      expect(r.body.error.type).toBe('authentication_error');
      await db.query(`UPDATE wallets SET owner_id = 'owner-1' WHERE id = $1`, [walletId]);
      expect((await call('GET', '/v1/keys')).status).toBe(401);
      // A key the new owner makes works.
      await db.query(`UPDATE wallets SET owner_id = 'owner-2' WHERE id = $1`, [walletId]);
      const fresh = await keys.createManagementKey(walletId);
      expect((await call('GET', '/v1/keys', undefined, fresh.key)).status).toBe(200);
    });

    it('closeFormerOwnerManagementKeys closes them without waiting for a call', async () => {
      const { walletId, mgmt } = await setup();
      await db.query(`UPDATE wallets SET owner_id = 'owner-9' WHERE id = $1`, [walletId]);
      const closed = await keys.closeFormerOwnerManagementKeys(walletId);
      expect(closed).toEqual([{ id: mgmt.id, name: 'ops', key_prefix: expect.stringMatching(/^sk-svcm-/) }]);
      expect(await keys.closeFormerOwnerManagementKeys(walletId)).toEqual([]); // says only what it closed itself
      const row = (await db.query<{ closed_reason: string }>('SELECT closed_reason FROM api_keys WHERE id = $1', [mgmt.id])).rows[0]!;
      expect(row.closed_reason).toBe('owner_changed');
    });
  });

  describe('temporary database faults', () => {
    it('answer 503 api_error', async () => {
      let fail = false;
      const failing = (q: Queryable): Queryable => ({
        query: (sql: string, params?: unknown[]) => {
          if (fail && /ORDER BY k\.created_at|INSERT INTO api_keys/.test(sql)) return Promise.reject(new Error('connection reset'));
          return q.query(sql, params) as never;
        },
      });
      const flaky: Db = {
        kind: db.kind,
        query: failing(db).query,
        transaction: (fn) => db.transaction((tx) => fn({ ...failing(tx), queryAndCommit: tx.queryAndCommit })),
        listen: (c, f) => db.listen(c, f),
        notify: (c, p) => db.notify(c, p),
        close: async () => undefined,
      };
      const k2 = createKeyService(flaky, { clock });
      const app2 = Fastify({ logger: false });
      await registerKeyRoutes(app2, { keys: k2, db: flaky, clock });
      try {
        const walletId = await makeWallet(db);
        const mgmt = await k2.createManagementKey(walletId);
        fail = true;
        for (const method of ['GET', 'POST'] as const) {
          const res = await app2.inject({
            method,
            url: '/v1/keys',
            headers: { authorization: `Bearer ${mgmt.key}` },
            ...(method === 'POST' ? { payload: {} } : {}),
          });
          expect(res.statusCode).toBe(503);
          expect(res.json().error.type).toBe('api_error');
          expect(res.body).not.toContain('connection reset');
        }
        expect(await activeCount(walletId)).toBe(0);
      } finally {
        await app2.close();
        await k2.close();
      }
    });
  });
});
