// Authentication: key extraction, refusals (401), expiry at 00:00 KST, revocation across processes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { openPg } from '../../engine/db/pg.ts';
import { createKeyService, type KeyService, keyFromHeaders } from '../../engine/keys/index.ts';
import { describeEachDatabase, openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';

let walletSeq = 0;
async function makeWallet(db: Db, opts: { splits?: boolean; owner?: string } = {}): Promise<string> {
  const id = `w_auth_${process.pid}_${++walletSeq}_${Math.random().toString(36).slice(2, 8)}`;
  await db.query('INSERT INTO wallets (id, owner_id, splits_usage) VALUES ($1, $2, $3)', [
    id,
    opts.owner ?? 'owner-1',
    opts.splits ?? false,
  ]);
  return id;
}

async function within<T>(ms: number, probe: () => Promise<T | undefined>): Promise<{ value: T; after: number }> {
  const start = Date.now();
  for (;;) {
    const v = await probe();
    if (v !== undefined) return { value: v, after: Date.now() - start };
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const refused = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e) => e as { status: number; type: string; message: string },
  );

describe('keyFromHeaders', () => {
  it('reads a bearer key, and x-api-key only where allowed', () => {
    expect(keyFromHeaders({ authorization: 'Bearer sk-svc-abc' }, { allowXApiKey: false })).toBe('sk-svc-abc');
    expect(keyFromHeaders({ authorization: 'bearer   sk-svc-abc ' }, { allowXApiKey: false })).toBe('sk-svc-abc');
    expect(keyFromHeaders({ authorization: 'Basic xyz' }, { allowXApiKey: false })).toBeUndefined();
    expect(keyFromHeaders({ authorization: 'Bearer' }, { allowXApiKey: false })).toBeUndefined();
    expect(keyFromHeaders({ 'x-api-key': 'sk-svc-abc' }, { allowXApiKey: false })).toBeUndefined();
    expect(keyFromHeaders({ 'x-api-key': 'sk-svc-abc' }, { allowXApiKey: true })).toBe('sk-svc-abc');
    expect(keyFromHeaders({ authorization: 'Bearer sk-svc-1', 'x-api-key': 'sk-svc-2' }, { allowXApiKey: true })).toBe('sk-svc-1');
    expect(keyFromHeaders({}, { allowXApiKey: true })).toBeUndefined();
  });
});

describeEachDatabase('authentication', (getDb) => {
  const clock = fixedClock('2026-12-31T03:00:00Z'); // 2026-12-31 12:00 KST
  let db: Db;
  let keys: KeyService;
  beforeAll(async () => {
    db = getDb();
    keys = createKeyService(db, { clock });
    await keys.ready();
  });
  afterAll(async () => {
    await keys?.close();
  });

  it('accepts a normal key on AI doors and returns its context', async () => {
    const walletId = await makeWallet(db);
    const k = await keys.createApiKey(walletId, { name: 'n', monthlyLimitCredits: 50, dailyLimitCredits: 5 });
    const auth = await keys.authenticate(k.key, 'api');
    expect(auth).toEqual({
      keyId: k.id,
      walletId,
      kind: 'api',
      audience: null,
      keyPrefix: `${k.key.slice(0, 12)}…`,
      monthlyLimitNano: 50_000n,
      dailyLimitNano: 5_000n,
      splitsUsage: false,
      expiresOn: null,
      expiresAt: null,
      models: null,
      group: null,
      movesSeen: 0, // no key moved in this process before the key was read
    });
  });

  it('refuses missing, unknown and malformed keys with 401 naming the header', async () => {
    const missing = await refused(keys.authenticate(undefined, 'api'));
    expect(missing).toMatchObject({ status: 401, type: 'authentication_error' });
    expect(missing!.message).toContain('Authorization: Bearer <API_KEY>');
    expect(missing!.message).not.toContain('x-api-key');
    const missingX = await refused(keys.authenticate(undefined, 'api', { allowXApiKey: true }));
    expect(missingX!.message).toContain('x-api-key');
    const missingM = await refused(keys.authenticate('', 'management'));
    expect(missingM!.message).toContain('<MANAGEMENT_KEY>');
    for (const s of [`sk-svc-${'a'.repeat(43)}`, `sk-svcm-${'b'.repeat(43)}`, 'hello', 'sk-svc-']) {
      const kind = s.startsWith('sk-svcm-') ? 'management' : 'api';
      expect(await refused(keys.authenticate(s, kind))).toMatchObject({ status: 401, type: 'authentication_error' });
    }
  });

  it('refuses the wrong kind both ways', async () => {
    const walletId = await makeWallet(db);
    const api = await keys.createApiKey(walletId);
    const mgmt = await keys.createManagementKey(walletId);
    const a = await refused(keys.authenticate(api.key, 'management'));
    expect(a).toMatchObject({ status: 401, type: 'authentication_error' });
    expect(a!.message).toContain('management key');
    const m = await refused(keys.authenticate(mgmt.key, 'api'));
    expect(m).toMatchObject({ status: 401, type: 'authentication_error' });
    expect(m!.message).toContain('Management keys');
    await expect(keys.authenticate(mgmt.key, 'management')).resolves.toMatchObject({ kind: 'management', keyId: mgmt.id });
  });

  it('stops a key at 00:00 KST on the day after expires_on (year end)', async () => {
    const walletId = await makeWallet(db);
    const k = await keys.createApiKey(walletId, { expiresOn: '2026-12-31' });
    const saved = clock.now();
    try {
      clock.set('2026-12-31T14:59:59.999Z');
      const ok = await keys.authenticate(k.key, 'api');
      expect(ok.expiresAt?.toISOString()).toBe('2026-12-31T15:00:00.000Z');
      expect(ok.expiresOn).toBe('2026-12-31');
      clock.set('2026-12-31T15:00:00.000Z');
      const e = await refused(keys.authenticate(k.key, 'api'));
      expect(e).toMatchObject({ status: 401, type: 'authentication_error' });
      expect(e!.message).toContain('expired');
    } finally {
      clock.set(saved);
    }
  });

  it('revocation is immediate in the revoking process, even for a cached key', async () => {
    const walletId = await makeWallet(db);
    const k = await keys.createApiKey(walletId);
    await keys.authenticate(k.key, 'api');
    expect(await keys.closeKey(k.id)).toBe(true);
    expect(await refused(keys.authenticate(k.key, 'api'))).toMatchObject({ status: 401 });
    expect(await keys.closeKey(k.id)).toBe(false);
  });

  it('a second service on the same database sees a revocation within one second (NOTIFY)', async () => {
    const other = createKeyService(db, { clock, cacheTtlMs: 60_000 });
    try {
      await other.ready();
      const walletId = await makeWallet(db);
      const k = await keys.createApiKey(walletId);
      await other.authenticate(k.key, 'api'); // cached in `other`
      await keys.closeKey(k.id);
      const { after } = await within(1000, async () => ((await refused(other.authenticate(k.key, 'api'))) ? true : undefined));
      expect(after).toBeLessThan(1000);
    } finally {
      await other.close();
    }
  });

  it('keeps a lookup cached (a change made behind its back is not seen until a notification)', async () => {
    const walletId = await makeWallet(db);
    const k = await keys.createApiKey(walletId);
    await keys.authenticate(k.key, 'api');
    await db.query(`UPDATE api_keys SET monthly_limit_credits = 3 WHERE id = $1`, [k.id]);
    expect((await keys.authenticate(k.key, 'api')).monthlyLimitNano).toBeNull();
    await db.notify('key_revoked', k.id);
    await within(1000, async () => ((await keys.authenticate(k.key, 'api')).monthlyLimitNano === 3000n ? true : undefined));
  });

  it("audience is the key's only when the wallet splits usage", async () => {
    const school = await makeWallet(db, { splits: true });
    const s = await keys.createApiKey(school, { audience: 'student' });
    expect((await keys.authenticate(s.key, 'api')).audience).toBe('student');
    const plain = await makeWallet(db);
    const p = await keys.createApiKey(plain, { audience: 'student' });
    expect((await keys.authenticate(p.key, 'api')).audience).toBeNull();
  });

  it('refuses a management key whose creator is no longer the owner, and closes it', async () => {
    const walletId = await makeWallet(db);
    const m = await keys.createManagementKey(walletId);
    await keys.authenticate(m.key, 'management');
    await db.query(`UPDATE wallets SET owner_id = 'someone-else' WHERE id = $1`, [walletId]);
    const e = await refused(keys.authenticate(m.key, 'management'));
    expect(e).toMatchObject({ status: 401, type: 'authentication_error' });
    expect(e!.message).toContain('owner');
    const row = (await db.query<{ closed_reason: string }>('SELECT closed_reason FROM api_keys WHERE id = $1', [m.id])).rows[0]!;
    expect(row.closed_reason).toBe('owner_changed');
  });

  it('records last use in batches', async () => {
    const walletId = await makeWallet(db);
    const k = await keys.createApiKey(walletId);
    await keys.authenticate(k.key, 'api');
    expect(keys.pendingLastUsed(k.id)?.toISOString()).toBe(clock.now().toISOString());
    await keys.flushLastUsed();
    const row = (await db.query<{ last_used_at: Date }>('SELECT last_used_at FROM api_keys WHERE id = $1', [k.id])).rows[0]!;
    expect(new Date(row.last_used_at).toISOString()).toBe(clock.now().toISOString());
  });
});

describe.skipIf(!postgresAvailability.ok)('revocation across processes [postgres: two pools, two listeners]', () => {
  const clock = fixedClock('2026-05-01T00:00:00Z');
  let pgA: TestPostgres;
  let dbB: Db;
  let a: KeyService;
  let b: KeyService;
  beforeAll(async () => {
    pgA = await openTestPostgres();
    dbB = await openPg({ url: pgA.url, max: 4 });
    a = createKeyService(pgA.db, { clock });
    b = createKeyService(dbB, { clock, cacheTtlMs: 60_000 });
    await Promise.all([a.ready(), b.ready()]);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await dbB?.close();
    await pgA?.cleanup();
  });

  it('a key closed in process A is refused in process B within one second', async () => {
    const walletId = await makeWallet(pgA.db);
    const ks = await Promise.all(Array.from({ length: 5 }, () => a.createApiKey(walletId)));
    for (const k of ks) await b.authenticate(k.key, 'api'); // all cached in B
    for (const k of ks) {
      await a.closeKey(k.id);
      const { after } = await within(1000, async () => ((await refused(b.authenticate(k.key, 'api'))) ? true : undefined));
      expect(after).toBeLessThan(1000);
    }
  });

  it('a management key closing itself in A is refused in B', async () => {
    const walletId = await makeWallet(pgA.db);
    const m = await a.createManagementKey(walletId);
    await b.authenticate(m.key, 'management');
    await pgA.db.query(`UPDATE wallets SET owner_id = 'new-owner' WHERE id = $1`, [walletId]);
    expect(await refused(a.authenticate(m.key, 'management'))).toMatchObject({ status: 401 });
    await pgA.db.query(`UPDATE wallets SET owner_id = 'owner-1' WHERE id = $1`, [walletId]);
    expect(await refused(b.authenticate(m.key, 'management'))).toMatchObject({ status: 401 });
  });
});
