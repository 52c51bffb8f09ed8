// Per-key quotas on Korean days and months and GET /v1/key (audience refusals: test/calls/caller-refusals.test.ts).
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { openPg } from '../../engine/db/pg.ts';
import { type AuthContext, createKeyService, type KeyService } from '../../engine/keys/index.ts';
import { createLedger, type Ledger, type Reservation, type ReserveResult } from '../../engine/money/ledger.ts';
import { keyDayRows } from '../helpers/charge-rows.ts';
import { describeEachDatabase, openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';
import { makeWallet, useKeyDoors } from '../helpers/key-doors.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const C = 1000n; // nano-USD per credit

const refused = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e) => e as { status: number; type: string; message: string },
  );

describeEachDatabase('key quotas', (getDb) => {
  const clock = fixedClock('2026-12-31T03:00:00Z');
  const fixture = useKeyDoors(getDb, clock);
  let db: Db;
  let keys: KeyService;
  let app: FastifyInstance;
  beforeAll(() => {
    ({ db, keys, app } = fixture);
  });

  async function key(
    opts: { monthly?: number | null; daily?: number | null; expiresOn?: string; splits?: boolean; audience?: 'student' | 'teacher' } = {},
  ) {
    const walletId = await makeWallet(db, { splits: opts.splits });
    const k = await keys.createApiKey(walletId, {
      monthlyLimitCredits: opts.monthly ?? null,
      dailyLimitCredits: opts.daily ?? null,
      expiresOn: opts.expiresOn ?? null,
      audience: opts.audience,
    });
    const auth = await keys.authenticate(k.key, 'api');
    return { ...k, auth, walletId };
  }

  it("monthly limit: checked at call start against the call's largest amount", async () => {
    const { auth } = await key({ monthly: 10 });
    const now = new Date('2026-12-15T03:00:00Z');
    await expect(keys.quota.checkQuota(auth, 10n * C, now)).resolves.toBeUndefined();
    const e = await refused(keys.quota.checkQuota(auth, 10n * C + 1n, now));
    expect(e).toMatchObject({ status: 429, type: 'key_limit_exceeded' });
    expect(e!.message).toContain('monthly');
    expect(e!.message).toContain('2026-12-31T15:00:00.000Z');
    await keys.quota.recordUsage(auth.keyId, 4n * C, now);
    await expect(keys.quota.checkQuota(auth, 6n * C, now)).resolves.toBeUndefined();
    expect(await refused(keys.quota.checkQuota(auth, 6n * C + 1n, now))).toMatchObject({ status: 429 });
  });

  it('the monthly 429 says what the call may use and that a lower max_tokens lowers it, and counts holds', async () => {
    const { auth } = await key({ monthly: 10 });
    const now = new Date('2026-12-15T03:00:00Z');
    await keys.quota.recordUsage(auth.keyId, 4n * C, now);
    const e = await refused(keys.quota.checkQuota(auth, 7n * C, now));
    expect(e!.message).toContain('4 of 10 credits used this month');
    expect(e!.message).toContain('may use up to 7 credits');
    expect(e!.message).toContain('Asking for less (a lower output limit, fewer images or seconds) lowers what the call may use');
    expect(e!.message).not.toContain('held');
    const withHolds = keys.quota.monthlyLimitError(auth, 2n * C, 4n * C, 5n * C, now);
    expect(withHolds).toMatchObject({ status: 429, type: 'key_limit_exceeded' });
    expect(withHolds.message).toContain("5 more held by this key's calls still in progress");
    expect(withHolds.message).toContain('Asking for less');
    expect(withHolds.message).toContain('2026-12-31T15:00:00.000Z');
    // A month with no room left: asking for less cannot help, so the 429 does not suggest it (found by an attack).
    const spent = keys.quota.monthlyLimitError(auth, 2n * C, 10n * C, 0n, now);
    expect(spent.message).toContain('10 of 10 credits used this month');
    expect(spent.message).not.toContain('Asking for less');
  });

  describe('monthly limit against calls in flight (the ledger checks it when it reserves)', () => {
    const now = new Date('2026-12-15T03:00:00Z');
    const HOLD = 300n * C;
    let ledger: Ledger;
    beforeAll(() => {
      ledger = createLedger(db, { clock });
    });

    /** A funded wallet and a key on it limited to 3,000 credits a month. */
    async function limitedKey() {
      const w = await ledger.createWallet({ credits: 1_000_000 });
      const k = await keys.createApiKey(w.id, { monthlyLimitCredits: 3000 });
      return { walletId: w.id, auth: await keys.authenticate(k.key, 'api') };
    }
    const reserve = (l: Ledger, auth: AuthContext, amountNano = HOLD): Promise<ReserveResult> =>
      l.reserve({
        walletId: auth.walletId,
        vendor: 'b',
        amountNano,
        callId: 'call',
        keyId: auth.keyId,
        cap: keys.quota.monthlyCap(auth, now)!,
      });
    const held = (rs: ReserveResult[]) => rs.flatMap((r) => (r.ok ? [r.reservation] : []));

    it('40 reserves sent at once: exactly the 10 that fit hold; the others are refused and hold nothing', async () => {
      const { walletId, auth } = await limitedKey();
      const results = await Promise.all(Array.from({ length: 40 }, () => reserve(ledger, auth)));
      expect(held(results)).toHaveLength(10);
      for (const r of results.filter((x) => !x.ok)) {
        expect(r).toMatchObject({ ok: false, reason: 'key_limit', keyUsedNano: 0n, keyHeldNano: 3000n * C, availableNano: 0n });
      }
      expect((await ledger.balance(walletId)).reservedNano).toBe(3000n * C);
      await expectJournalAddsUp(db, walletId);
      for (const r of held(results)) await ledger.release(r);
    });

    it('a release gives its hold back to the limit; a settle counts what it charged, not what it held', async () => {
      const { walletId, auth } = await limitedKey();
      const first = held(await Promise.all(Array.from({ length: 10 }, () => reserve(ledger, auth))));
      expect(first).toHaveLength(10);
      expect(await reserve(ledger, auth, 1n)).toMatchObject({ ok: false, reason: 'key_limit' });

      await ledger.release(first[0]!);
      const again = await reserve(ledger, auth);
      expect(again.ok).toBe(true);

      // Settled at 100: 100 used + 2,700 held leaves 200.
      await ledger.settle(first[1]!, 100n * C, keyDayRows(auth.keyId, now));
      expect(await reserve(ledger, auth, 200n * C + 1n)).toMatchObject({
        ok: false,
        reason: 'key_limit',
        keyUsedNano: 100n * C,
        keyHeldNano: 2700n * C,
        availableNano: 200n * C,
      });
      const fits = await reserve(ledger, auth, 200n * C);
      expect(fits.ok).toBe(true);

      for (const r of [
        ...first.slice(2),
        (again as { reservation: Reservation }).reservation,
        (fits as { reservation: Reservation }).reservation,
      ])
        await ledger.release(r);
      expect((await ledger.balance(walletId)).reservedNano).toBe(0n);
      await expectJournalAddsUp(db, walletId);
    });

    it('a settle and a reserve sent together are decided in order: the reserve sees the settle', async () => {
      const { auth } = await limitedKey();
      const holds = held(await Promise.all(Array.from({ length: 10 }, () => reserve(ledger, auth))));
      // Sent in the same tick (one batch where the ledger batches): settle at 100, then a reserve of 200.
      const [, after] = await Promise.all([
        ledger.settle(holds[0]!, 100n * C, keyDayRows(auth.keyId, now)),
        reserve(ledger, auth, 200n * C),
      ]);
      expect(after.ok).toBe(true);
      for (const r of [...holds.slice(1), (after as { reservation: Reservation }).reservation]) await ledger.release(r);
    });

    it('keys without a monthly limit carry no cap; another key of the wallet has its own', async () => {
      const { walletId, auth } = await limitedKey();
      const unlimited = await keys.authenticate((await keys.createApiKey(walletId, { dailyLimitCredits: 5 })).key, 'api');
      expect(keys.quota.monthlyCap(unlimited, now)).toBeNull();
      const mine = held(await Promise.all(Array.from({ length: 10 }, () => reserve(ledger, auth))));
      const other = await keys.createApiKey(walletId, { monthlyLimitCredits: 300 });
      const otherAuth = await keys.authenticate(other.key, 'api');
      expect((await reserve(ledger, otherAuth)).ok).toBe(true);
      expect(await reserve(ledger, otherAuth, 1n)).toMatchObject({ ok: false, reason: 'key_limit' });
      for (const r of mine) await ledger.release(r);
    });
  });

  it("daily limit: blocks only once the day's use has reached it; the overshoot counts", async () => {
    const { auth } = await key({ daily: 10 });
    const now = new Date('2026-12-15T03:00:00Z');
    await keys.quota.recordUsage(auth.keyId, 10n * C - 1n, now);
    // Not reached yet: even a call that may cost far more passes (the daily check ignores the call's size).
    await expect(keys.quota.checkQuota(auth, 1_000n * C, now)).resolves.toBeUndefined();
    await keys.quota.recordUsage(auth.keyId, 5n * C, now); // overshoot
    const e = await refused(keys.quota.checkQuota(auth, 1n, now));
    expect(e).toMatchObject({ status: 429, type: 'key_limit_exceeded' });
    expect(e!.message).toContain('daily limit');
    expect(e!.message).toContain('2026-12-15T15:00:00.000Z');
    const s = await keys.quota.keyStatus(auth, now);
    expect(s.day).toEqual({ limit_credits: 10, used_credits: 15, remaining_credits: 0, resets_at: '2026-12-15T15:00:00.000Z' });
  });

  it('counts on the Korean day and month of the finish, across midnight, month end and year end', async () => {
    const { auth } = await key({ monthly: 100, daily: 10 });
    const lastSecond = new Date('2026-12-31T14:59:59Z'); // 23:59:59 KST on 31 December
    const newYear = new Date('2026-12-31T15:00:00Z'); // 00:00 KST on 1 January 2027
    await keys.quota.recordUsage(auth.keyId, 10n * C, lastSecond);
    await keys.quota.recordUsage(auth.keyId, 85n * C, new Date('2026-12-01T00:00:00Z')); // 1 December KST 09:00
    expect(await refused(keys.quota.checkQuota(auth, 1n, lastSecond))).toMatchObject({ status: 429 }); // daily reached
    expect(await refused(keys.quota.checkQuota(auth, 6n * C, lastSecond))).toMatchObject({ status: 429 });
    await expect(keys.quota.checkQuota(auth, 100n * C, newYear)).resolves.toBeUndefined();

    let s = await keys.quota.keyStatus(auth, lastSecond);
    expect(s.month).toEqual({ limit_credits: 100, used_credits: 95, remaining_credits: 5, resets_at: '2026-12-31T15:00:00.000Z' });
    expect(s.day).toEqual({ limit_credits: 10, used_credits: 10, remaining_credits: 0, resets_at: '2026-12-31T15:00:00.000Z' });
    s = await keys.quota.keyStatus(auth, newYear);
    expect(s.month).toEqual({ limit_credits: 100, used_credits: 0, remaining_credits: 100, resets_at: '2027-01-31T15:00:00.000Z' });
    expect(s.day).toEqual({ limit_credits: 10, used_credits: 0, remaining_credits: 10, resets_at: '2027-01-01T15:00:00.000Z' });

    // A call (a video, say) that finishes after midnight counts on the next day and month.
    await keys.quota.recordUsage(auth.keyId, 3n * C, newYear);
    s = await keys.quota.keyStatus(auth, new Date('2027-01-01T14:59:59Z'));
    expect(s.day.used_credits).toBe(3);
    expect(s.month.used_credits).toBe(3);
    // UTC month end is not Korean month end: 2027-01-31T16:00Z is already 1 February in Korea.
    s = await keys.quota.keyStatus(auth, new Date('2027-01-31T16:00:00Z'));
    expect(s.month.used_credits).toBe(0);
    expect(s.month.resets_at).toBe('2027-02-28T15:00:00.000Z');
  });

  it('usage rounds up to whole credits; remaining is never below 0; null without limits', async () => {
    const { auth } = await key();
    const now = new Date('2026-06-10T03:00:00Z');
    await keys.quota.recordUsage(auth.keyId, 1n, now);
    let s = await keys.quota.keyStatus(auth, now);
    expect(s.month).toEqual({ limit_credits: null, used_credits: 1, remaining_credits: null, resets_at: '2026-06-30T15:00:00.000Z' });
    expect(s.day).toEqual({ limit_credits: null, used_credits: 1, remaining_credits: null, resets_at: '2026-06-10T15:00:00.000Z' });
    await keys.quota.recordUsage(auth.keyId, 1000n, now);
    s = await keys.quota.keyStatus(auth, now);
    expect(s.day.used_credits).toBe(2); // 1001 nano → 2 credits
    await expect(keys.quota.checkQuota(auth, 10n ** 15n, now)).resolves.toBeUndefined();
  });

  it('quotas belong to the key id: another key of the same wallet has its own count', async () => {
    const a = await key({ daily: 1 });
    const b2 = await keys.createApiKey(a.walletId, { dailyLimitCredits: 1 });
    const bAuth = await keys.authenticate(b2.key, 'api');
    const now = new Date('2026-06-10T03:00:00Z');
    await keys.quota.recordUsage(a.auth.keyId, 1n * C, now);
    expect(await refused(keys.quota.checkQuota(a.auth, 1n, now))).toMatchObject({ status: 429 });
    await expect(keys.quota.checkQuota(bAuth, 1n, now)).resolves.toBeUndefined();
  });

  it('raising a limit lifts the block at once (PATCH reaches authentication)', async () => {
    const walletId = await makeWallet(db);
    const mgmt = await keys.createManagementKey(walletId);
    const made = await app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: `Bearer ${mgmt.key}` },
      payload: { monthly_limit_credits: 1 },
    });
    const rec = made.json().data[0];
    await keys.quota.recordUsage(rec.id, 1n * C, clock.now());
    const auth1 = await keys.authenticate(rec.key, 'api');
    expect(await refused(keys.quota.checkQuota(auth1, 1n, clock.now()))).toMatchObject({ status: 429 });
    await app.inject({
      method: 'PATCH',
      url: `/v1/keys/${rec.id}`,
      headers: { authorization: `Bearer ${mgmt.key}` },
      payload: { monthly_limit_credits: 5 },
    });
    const auth2 = await keys.authenticate(rec.key, 'api');
    await expect(keys.quota.checkQuota(auth2, 1n, clock.now())).resolves.toBeUndefined();
    const listed = await app.inject({ method: 'GET', url: `/v1/keys/${rec.id}`, headers: { authorization: `Bearer ${mgmt.key}` } });
    expect(listed.json()).toMatchObject({ month_used_credits: 1, day_used_credits: 1, monthly_limit_credits: 5 });
  });

  describe('GET /v1/key', () => {
    it("returns the calling key's status exactly", async () => {
      const { key: secret, auth } = await key({ monthly: 100, daily: 10, expiresOn: '2027-01-15', splits: true, audience: 'teacher' });
      await keys.quota.recordUsage(auth.keyId, 2_500n, clock.now());
      const res = await app.inject({ method: 'GET', url: '/v1/key', headers: { authorization: `Bearer ${secret}` } });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        object: 'key',
        key_prefix: `${secret.slice(0, 12)}…`,
        audience: 'teacher',
        expires_at: '2027-01-15T15:00:00.000Z',
        usable_until: '2027-01-15',
        month: { limit_credits: 100, used_credits: 3, remaining_credits: 97, resets_at: '2026-12-31T15:00:00.000Z' },
        day: { limit_credits: 10, used_credits: 3, remaining_credits: 7, resets_at: '2026-12-31T15:00:00.000Z' },
        group: null,
      });
    });

    it('no limits, no expiry, usage not split: nulls', async () => {
      const { key: secret } = await key();
      const res = await app.inject({ method: 'GET', url: '/v1/key', headers: { authorization: `Bearer ${secret}` } });
      expect(res.json()).toMatchObject({
        audience: null,
        expires_at: null,
        usable_until: null,
        month: { limit_credits: null, used_credits: 0, remaining_credits: null },
        day: { limit_credits: null, used_credits: 0, remaining_credits: null },
      });
    });

    it('refuses a management key, a missing key and an expired key with 401', async () => {
      const walletId = await makeWallet(db);
      const mgmt = await keys.createManagementKey(walletId);
      const m = await app.inject({ method: 'GET', url: '/v1/key', headers: { authorization: `Bearer ${mgmt.key}` } });
      expect(m.statusCode).toBe(401);
      expect(m.json().error.type).toBe('authentication_error');
      const none = await app.inject({ method: 'GET', url: '/v1/key' });
      expect(none.statusCode).toBe(401);
      const { key: secret } = await key({ expiresOn: '2026-12-31' });
      const saved = clock.now();
      try {
        clock.set('2026-12-31T15:00:00Z');
        const e = await app.inject({ method: 'GET', url: '/v1/key', headers: { authorization: `Bearer ${secret}` } });
        expect(e.statusCode).toBe(401);
      } finally {
        clock.set(saved);
      }
    });
  });
});
describe.skipIf(!postgresAvailability.ok)('monthly limit across processes [postgres: two ledgers, two pools]', () => {
  const clock = fixedClock('2026-12-15T03:00:00Z');
  let pg: TestPostgres;
  let dbB: Db;
  let keys: KeyService;
  let a: Ledger;
  let b: Ledger;
  beforeAll(async () => {
    pg = await openTestPostgres();
    dbB = await openPg({ url: pg.url, max: 4 });
    keys = createKeyService(pg.db, { clock });
    a = createLedger(pg.db, { clock, owner: 'process-a' });
    b = createLedger(dbB, { clock, owner: 'process-b' });
  });
  afterAll(async () => {
    await keys?.close();
    await dbB?.close();
    await pg?.cleanup();
  });

  it('40 reserves of one key spread over two ledgers: exactly the 10 that fit hold', async () => {
    const w = await a.createWallet({ credits: 1_000_000 });
    const auth = await keys.authenticate((await keys.createApiKey(w.id, { monthlyLimitCredits: 3000 })).key, 'api');
    const cap = keys.quota.monthlyCap(auth, clock.now())!;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).reserve({ walletId: w.id, vendor: 'b', amountNano: 300n * C, callId: `c${i}`, keyId: auth.keyId, cap }),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(10);
    expect(results.filter((r) => !r.ok && r.reason === 'key_limit')).toHaveLength(30);
    expect((await a.balance(w.id)).reservedNano).toBe(3000n * C);
    await expectJournalAddsUp(pg.db, w.id);
  });
});
