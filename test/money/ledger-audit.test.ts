// The ledger's own audit (engine/money/audit.ts) in a real gateway, on PGlite and PostgreSQL: a ledger moved by
// calls over HTTP, reserves, settles, releases, draws and trims passes; each kind of damage done to the tables
// by hand fails its check with the ids of the wallet, lot or reservation, /metrics says so, and the error is
// logged with those ids and nothing a client wrote.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEDGER_CHECKS, type LedgerCheck } from '../../engine/money/audit.ts';
import type { Reservation } from '../../engine/money/ledger.ts';
import { post } from '../e2e/e2e.ts';
import {
  type DatabaseKind,
  databaseKinds,
  openTestPostgres,
  postgresAvailability,
  REQUIRE_POSTGRES,
  type TestPostgres,
} from '../helpers/databases.ts';
import { METRICS_OPEN_TO_LOOPBACK, startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { series } from '../helpers/metrics-text.ts';

const MINUTE = 60_000;
/** billing.yaml's sweep_interval_ms (60 s) × HOLD_GRACE_SWEEPS (3). */
const GRACE_MS = 3 * MINUTE;
const now = Date.parse(TEST_NOW);

function describeOn(kind: DatabaseKind, fn: (g: () => TestGateway, log: () => Record<string, any>[]) => void) {
  const name = `ledger audit in a gateway [${kind}]`;
  if (kind === 'postgres' && !postgresAvailability.ok) {
    if (REQUIRE_POSTGRES) {
      describe(name, () => {
        it('PostgreSQL is required (REQUIRE_POSTGRES=1)', () => {
          throw new Error(postgresAvailability.ok ? 'PostgreSQL answered' : postgresAvailability.reason);
        });
      });
    } else
      describe.skip(name, () =>
        fn(
          () => undefined as never,
          () => [],
        ),
      );
    return;
  }
  describe(name, () => {
    const lines: Record<string, any>[] = [];
    let pg: TestPostgres | undefined;
    let t: TestGateway | undefined;
    beforeAll(async () => {
      if (kind === 'postgres') pg = await openTestPostgres({ migrate: false });
      t = await startTestGateway({
        env: { ...METRICS_OPEN_TO_LOOPBACK, ...(pg ? { DATABASE_URL: pg.url } : {}) },
        logger: { level: 'info', stream: { write: (l) => lines.push(JSON.parse(l)) } },
      });
    });
    afterAll(async () => {
      await t?.close();
      await pg?.cleanup();
    });
    fn(
      () => t!,
      () => lines,
    );
  });
}

for (const kind of databaseKinds) {
  describeOn(kind, (g, log) => {
    /**
     * An empty ledger, then one wallet moved every way: a chat call over HTTP, a reserve settled, one
     * released, one drawn from and trimmed (still held, like a lease) and one still held (a call in flight).
     */
    async function movedWallet() {
      const { db, ledger, keys } = g().gw;
      await db.query('TRUNCATE wallets CASCADE');
      const wallet = await ledger.createWallet({ credits: 5_000_000 });
      await ledger.topUp(wallet.id, { credits: 1_000_000, vendors: ['b'] });
      const { key } = await keys.createApiKey(wallet.id, { name: 'audited' });
      const res = await post(
        g(),
        '/v1/chat/completions',
        { model: 'b-5', messages: [{ role: 'user', content: 'Hello audit' }] },
        { authorization: `Bearer ${key}` },
      );
      expect(res.status).toBe(200);
      await res.text();
      const reserve = async (amount = 1_000_000n, expiresAt?: Date): Promise<Reservation> => {
        const r = await ledger.reserve({ walletId: wallet.id, vendor: 'b', amountNano: amount, callId: 'audit-test', expiresAt });
        if (!r.ok) throw new Error(`reserve refused: ${r.reason}`);
        return r.reservation;
      };
      const settled = await reserve();
      await ledger.settle(settled, 400_000n);
      await ledger.release(await reserve());
      const lease = await reserve(3_000_000n);
      await ledger.draw(lease, 500_000n, 'draw-1');
      await ledger.trim(lease, 700_000n);
      const inFlight = await reserve();
      return { walletId: wallet.id, key, settled, lease, inFlight };
    }

    const scrape = async () => (await fetch(`${g().url}/metrics`)).text();

    /** The audit's result, what /metrics says of it, and the error line it logged (if any). */
    async function audit() {
      const before = log().length;
      const run = await g().gw.ledgerAudit.run();
      expect(run).not.toBeNull();
      const text = await scrape();
      const failures = Object.fromEntries(LEDGER_CHECKS.map((check) => [check, series(text, 'gateway_ledger_audit_failures', { check })]));
      const errors = log()
        .slice(before)
        .filter((l) => l.msg === 'ledger audit failed');
      expect(errors.length).toBeLessThanOrEqual(1);
      return {
        run: run!,
        ok: series(text, 'gateway_ledger_audit_ok'),
        lastRun: series(text, 'gateway_ledger_audit_last_run_seconds'),
        failures,
        error: errors[0],
      };
    }

    /** The audit failed exactly `failed` (rows per check), said so on /metrics, and logged it at error level. */
    async function expectFailed(failed: Partial<Record<LedgerCheck, number>>, secret: string) {
      const a = await audit();
      const want = Object.fromEntries(LEDGER_CHECKS.map((c) => [c, failed[c] ?? 0]));
      expect(a.run.ok).toBe(false);
      expect(a.run.failures).toEqual(want);
      expect(a.ok).toBe(0);
      expect(a.failures).toEqual(want);
      expect(a.lastRun).toBe(now / 1000);
      expect(a.error).toBeDefined();
      expect(a.error!.level).toBe(50);
      expect(a.error!.checks).toEqual(LEDGER_CHECKS.filter((c) => failed[c]));
      expect(a.error!.examples).toEqual(a.run.examples);
      expect(JSON.stringify(a.error)).not.toContain(secret);
      return a.run.examples;
    }

    it('before the first audit its series are absent, not 0', async () => {
      const text = await scrape();
      expect(text).toContain('# TYPE gateway_ledger_audit_ok gauge');
      expect(series(text, 'gateway_ledger_audit_ok')).toBeUndefined();
      expect(series(text, 'gateway_ledger_audit_last_run_seconds')).toBeUndefined();
      expect(series(text, 'gateway_ledger_audit_failures', { check: 'wallet_journal' })).toBeUndefined();
    });

    it('a ledger moved every way passes, a hold within the grace after its expiry included', async () => {
      const w = await movedWallet();
      const { ledger } = g().gw;
      const late = await ledger.reserve({
        walletId: w.walletId,
        vendor: 'b',
        amountNano: 1000n,
        callId: 'late',
        expiresAt: new Date(now - GRACE_MS + MINUTE),
      });
      expect(late.ok).toBe(true);
      const a = await audit();
      expect(a.run).toMatchObject({ ok: true, examples: {} });
      expect(a.ok).toBe(1);
      expect(a.failures).toEqual(Object.fromEntries(LEDGER_CHECKS.map((c) => [c, 0])));
      expect(a.lastRun).toBe(now / 1000);
      expect(a.error).toBeUndefined();
    });

    it('a journal row written under another wallet fails wallet_journal on both wallets, and no lot', async () => {
      const w = await movedWallet();
      const other = { walletId: (await g().gw.ledger.createWallet({ credits: 1 })).id };
      // The journal is append-only (UPDATE does nothing): the row is taken out and written again under the other wallet.
      const moved = await g().gw.db.query(
        `WITH gone AS (DELETE FROM ledger_journal WHERE id = (SELECT min(id) FROM ledger_journal WHERE reservation_id = $1 AND kind = 'settle')
                       RETURNING lot_id, reservation_id, kind, amount_nano, at)
         INSERT INTO ledger_journal (wallet_id, lot_id, reservation_id, kind, amount_nano, at)
         SELECT $2, lot_id, reservation_id, kind, amount_nano, at FROM gone RETURNING id`,
        [w.settled.id, other.walletId],
      );
      expect(moved.rows).toHaveLength(1);
      const examples = await expectFailed({ wallet_journal: 2 }, w.key);
      expect(examples.wallet_journal).toEqual(expect.arrayContaining([{ walletId: w.walletId }, { walletId: other.walletId }]));
    });

    it("a lot's balance column edited by hand fails lot_journal (with the lot) and its wallet's wallet_journal", async () => {
      const w = await movedWallet();
      const lotId = w.inFlight.lots[0]!.lotId;
      await g().gw.db.query('UPDATE credit_lots SET reserved_nano = reserved_nano + 7 WHERE id = $1', [lotId]);
      const examples = await expectFailed({ lot_journal: 1, wallet_journal: 1 }, w.key);
      expect(examples).toEqual({ lot_journal: [{ walletId: w.walletId, lotId }], wallet_journal: [{ walletId: w.walletId }] });
    });

    it('a journal row removed fails wallet_journal and lot_journal', async () => {
      const w = await movedWallet();
      const gone = await g().gw.db.query<{ lot_id: string }>(
        `DELETE FROM ledger_journal WHERE id = (SELECT min(id) FROM ledger_journal WHERE reservation_id = $1 AND kind = 'settle') RETURNING lot_id`,
        [w.settled.id],
      );
      expect(gone.rows).toHaveLength(1);
      const examples = await expectFailed({ wallet_journal: 1, lot_journal: 1 }, w.key);
      expect(examples).toEqual({
        wallet_journal: [{ walletId: w.walletId }],
        lot_journal: [{ walletId: w.walletId, lotId: gone.rows[0]!.lot_id }],
      });
    });

    it('a lot overspent below zero (its CHECK dropped, journal and columns in step) fails negative_balance alone', async () => {
      const w = await movedWallet();
      const { db } = g().gw;
      await db.query('ALTER TABLE credit_lots DROP CONSTRAINT IF EXISTS credit_lots_available_nano_check');
      // A charge the lots could not cover, written as a move would write it (reserve and settle in the journal,
      // the lot's columns moved alike) but without the lock that keeps it within the balance: everything adds up,
      // only the sign is wrong.
      const lotId = w.inFlight.lots[0]!.lotId;
      const over = (await db.query<{ v: string }>('SELECT (available_nano + 5)::text AS v FROM credit_lots WHERE id = $1', [lotId]))
        .rows[0]!.v;
      await db.query('UPDATE credit_lots SET available_nano = available_nano - $2::bigint WHERE id = $1', [lotId, over]);
      for (const kind of ['reserve', 'settle']) {
        await db.query(
          `INSERT INTO ledger_journal (wallet_id, lot_id, reservation_id, kind, amount_nano, at) VALUES ($1, $2, $3, $4, $5::bigint, now())`,
          [w.walletId, lotId, w.settled.id, kind, over],
        );
      }
      const examples = await expectFailed({ negative_balance: 1 }, w.key);
      expect(examples).toEqual({ negative_balance: [{ walletId: w.walletId, lotId }] });
    });

    it('a hold still held longer than the grace after its expiry fails expired_hold', async () => {
      const w = await movedWallet();
      const r = await g().gw.ledger.reserve({
        walletId: w.walletId,
        vendor: 'b',
        amountNano: 1000n,
        callId: 'stuck',
        expiresAt: new Date(now - GRACE_MS - MINUTE),
      });
      if (!r.ok) throw new Error('reserve refused');
      const examples = await expectFailed({ expired_hold: 1 }, w.key);
      expect(examples).toEqual({ expired_hold: [{ walletId: w.walletId, reservationId: r.reservation.id }] });
    });

    it('a held reservation whose lots do not add up to its amount fails hold_lots', async () => {
      const w = await movedWallet();
      await g().gw.db.query('UPDATE reservation_lots SET amount_nano = amount_nano - 1 WHERE reservation_id = $1', [w.lease.id]);
      const examples = await expectFailed({ hold_lots: 1 }, w.key);
      expect(examples).toEqual({ hold_lots: [{ walletId: w.walletId, reservationId: w.lease.id }] });
    });

    it('repaired, the next audit passes again and /metrics says 1', async () => {
      await movedWallet();
      const a = await audit();
      expect(a.ok).toBe(1);
      expect(a.failures.hold_lots).toBe(0);
    });
  });
}
