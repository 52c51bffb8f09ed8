// Lots that expire (issue 42), over HTTP on loopback, on PGlite and PostgreSQL, with the gateway's clock moved by
// hand: POST /admin/v1/wallets/{id}/credits takes expires_at (400 naming it when past or unreadable); the
// soonest-expiring lot pays first; from expires_at its remainder is gone from GET /v1/credits before any pass ran;
// the expiry pass moves it out as an `expire` row of the journal and a `credits.expired` entry of the audit trail,
// once however many passes run at once; a lease on the lot is voided and nothing is charged to it after its
// expiry; the ledger audit still adds up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { checkLedger } from '../../engine/money/audit.ts';
import { expireDueLots } from '../../engine/money/lot-expiry.ts';
import {
  type DatabaseKind,
  databaseKinds,
  openTestPostgres,
  postgresAvailability,
  REQUIRE_POSTGRES,
  type TestPostgres,
} from '../helpers/databases.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const DAY = 86_400_000;
const ADMIN = { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' };

function describeOn(kind: DatabaseKind, fn: (g: () => TestGateway, clock: ReturnType<typeof fixedClock>) => void) {
  const name = `lots that expire over HTTP [${kind}]`;
  const clock = fixedClock(TEST_NOW);
  if (kind === 'postgres' && !postgresAvailability.ok && !REQUIRE_POSTGRES) {
    describe.skip(name, () => fn(() => undefined as never, clock));
    return;
  }
  describe(name, () => {
    let pg: TestPostgres | undefined;
    let t: TestGateway | undefined;
    beforeAll(async () => {
      if (kind === 'postgres') pg = await openTestPostgres({ migrate: false });
      t = await startTestGateway({ clock, env: pg ? { DATABASE_URL: pg.url } : {} });
    });
    afterAll(async () => {
      await t?.close();
      await pg?.cleanup();
    });
    fn(() => t!, clock);
  });
}

for (const kind of databaseKinds) {
  describeOn(kind, (g, clock) => {
    const addCredits = (walletId: string, body: Record<string, unknown>) =>
      fetch(`${g().url}/admin/v1/wallets/${walletId}/credits`, { method: 'POST', headers: ADMIN, body: JSON.stringify(body) });
    const credits = async (key: string) =>
      (await (await fetch(`${g().url}/v1/credits`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
    const chat = (key: string) =>
      fetch(`${g().url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'a-top-5.5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
      });
    const at = (ms: number) => new Date(clock.now().getTime() + ms).toISOString();

    // A day the calendar lacks was read as another (2030-02-30 as 2030-03-02), by the admin API and the CLI alike.
    it('refuses an expires_at in the past, now, without an offset, or on a day the calendar lacks, with 400 naming it', async () => {
      const w = await g().gw.ledger.createWallet();
      const lacking = ['2030-02-30T00:00:00Z', '2031-02-29T12:00:00+09:00', '2030-04-31T00:00:00Z', '2030-13-01T00:00:00Z'];
      for (const expires_at of [at(-DAY), clock.now().toISOString(), '2030-01-01T00:00:00', 'next term', 12, ...lacking]) {
        const res = await addCredits(w.id, { credits: 1000, expires_at });
        expect(res.status, String(expires_at)).toBe(400);
        expect(((await res.json()) as any).error.param).toBe('expires_at');
      }
      expect((await g().gw.ledger.balance(w.id)).lots).toEqual([]);
    });

    it('pays from the soonest-expiring lot; at its expiry its remainder leaves credits, the journal and the trail say so once', async () => {
      const { ledger, keys, db } = g().gw;
      const w = await ledger.createWallet();
      const { key } = await keys.createApiKey(w.id, { name: 'class' });
      const made: Record<string, any> = {};
      for (const [name, body] of [
        ['keeps', { credits: 3_000_000 }],
        ['later', { credits: 3_000_000, expires_at: at(2 * DAY) }],
        ['soon', { credits: 3_000_000, expires_at: at(DAY) }],
      ] as const) {
        const res = await addCredits(w.id, body);
        expect(res.status).toBe(201);
        made[name] = await res.json();
      }
      expect(made.keeps.expires_at).toBeNull();
      expect(made.soon.expires_at).toBe(at(DAY));
      const listed = await credits(key);
      expect(listed.credits).toBe(9_000_000);
      expect(listed.lots.map((l: any) => [l.id, l.expires_at])).toEqual([
        [made.keeps.lot_id, null],
        [made.later.lot_id, at(2 * DAY)],
        [made.soon.lot_id, at(DAY)],
      ]);

      for (let i = 0; i < 3; i++) expect((await chat(key)).status).toBe(200);
      await g().gw.leases.flushed();
      const lots = new Map((await ledger.balance(w.id)).lots.map((l) => [l.id, l]));
      const untouched = (id: string) => lots.get(id)!.availableNano === lots.get(id)!.grantedNano;
      expect(untouched(made.keeps.lot_id) && untouched(made.later.lot_id)).toBe(true);
      expect(untouched(made.soon.lot_id)).toBe(false);

      // At expires_at: the remainder is out of credits at once, on this process's clock, before any pass.
      const soon = lots.get(made.soon.lot_id)!;
      const expiresAt = soon.expiresAt!;
      clock.set(expiresAt);
      const after = await credits(key);
      expect(after.credits).toBe(6_000_000);
      expect(after.lots.map((l: any) => l.id)).not.toContain(made.soon.lot_id);

      // A call now is paid by the next lot to expire, never by the expired one.
      expect((await chat(key)).status).toBe(200);
      await g().gw.leases.flushed();
      const later = (await ledger.balance(w.id)).lots.find((l) => l.id === made.later.lot_id)!;
      expect(later.availableNano).toBeLessThan(later.grantedNano);

      // Two passes at once (two processes): the money moves once.
      const failures: unknown[] = [];
      const passes = await Promise.all([0, 1].map(() => expireDueLots(db, 'test', clock.now(), (e) => failures.push(e))));
      expect(failures).toEqual([]);
      const expiries = passes.flat().filter((e) => e.lotId === made.soon.lot_id);
      expect(expiries).toHaveLength(1);
      const journal = await db.query<{ kind: string; amount_nano: string; at: Date | string }>(
        `SELECT kind, amount_nano::text, at FROM ledger_journal WHERE lot_id = $1 ORDER BY id`,
        [made.soon.lot_id],
      );
      const expired = journal.rows.filter((r) => r.kind === 'expire');
      expect(expired).toHaveLength(1);
      expect(BigInt(expired[0]!.amount_nano)).toBe(expiries[0]!.expiredNano);
      // Nothing charged to the expired lot from its expiry on (calls in flight on a lease draw elsewhere).
      const chargedAfter = journal.rows.filter((r) => r.kind === 'settle' && new Date(r.at).getTime() >= expiresAt.getTime());
      expect(chargedAfter).toEqual([]);

      const bal = await ledger.balance(w.id);
      const gone = bal.lots.find((l) => l.id === made.soon.lot_id)!;
      expect(gone.availableNano).toBe(0n);
      expect(gone.expiredNano).toBe(expiries[0]!.expiredNano);
      const { sum } = await expectJournalAddsUp(db, w.id);
      expect(sum.expiredNano).toBe(expiries[0]!.expiredNano);
      expect((await checkLedger(db, { walletIds: [w.id], heldExpiredBefore: null })).ok).toBe(true);

      const trail = (await (
        await fetch(`${g().url}/admin/v1/wallets/${w.id}/audit?action=credits.expired`, { headers: ADMIN })
      ).json()) as any;
      expect(trail.data).toHaveLength(1);
      expect(trail.data[0]).toMatchObject({
        action: 'credits.expired',
        actor: { kind: 'system', id: 'expiry' },
        target_id: made.soon.lot_id,
      });
      expect(trail.data[0].after).toEqual({
        expired_credits: Number(expiries[0]!.expiredNano / 1000n),
        expires_at: expiresAt.toISOString(),
      });

      const view = (await (await fetch(`${g().url}/admin/v1/wallets/${w.id}`, { headers: ADMIN })).json()) as any;
      const shown = view.lots.find((l: any) => l.id === made.soon.lot_id);
      expect(shown).toMatchObject({ credits: 0, expires_at: expiresAt.toISOString() });
      expect(shown.expired_credits).toBe(Number(expiries[0]!.expiredNano / 1000n));
      expect(view.credits).toBe((await credits(key)).credits);
    });
  });
}
