// A finish that waited for another transaction's draw of the same reservation decides from the hold as the
// draw left it. Under READ COMMITTED, a statement that waits for a row lock re-reads the locked rows
// (EvalPlanQual) but not the rows it joined to them: a batch that read what a reservation holds per lot in
// its locking statement released money the draw had already charged (seen in production: reserved
// 283,296,000, settled 283,296,000 and released 758,400 nano). PostgreSQL only: PGlite runs one
// transaction at a time, so nothing ever waits there.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { toGatewayError } from '../../engine/core/errors.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger, type Ledger, type Reservation } from '../../engine/money/ledger.ts';
import { LOCK_WAIT_MS, TablesLocked } from '../../engine/money/retry.ts';
import { chargeNotes } from '../helpers/charge-rows.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { usageRecordsOf } from '../helpers/usage-drafts.ts';

describeEachDatabase(
  'ledger lock waits',
  (getDb: () => Db) => {
    const clock = fixedClock('2026-05-01T00:00:00Z');

    /** Until some other backend waits on a lock that `pid` holds. */
    async function untilBlockedBy(pid: number): Promise<void> {
      for (let i = 0; i < 500; i++) {
        const r = await getDb().query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))',
          [pid],
        );
        if (r.rows[0]!.n > 0) return;
        await new Promise((res) => setTimeout(res, 10));
      }
      throw new Error(`nobody waited on backend ${pid}`);
    }

    let gates = 0;

    /** The backend waiting for advisory lock `gate`. */
    async function waiterOn(gate: number): Promise<number> {
      for (let i = 0; i < 500; i++) {
        const r = await getDb().query<{ pid: number }>(
          "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1::int::oid AND NOT granted",
          [gate],
        );
        if (r.rows[0]) return r.rows[0].pid;
        await new Promise((res) => setTimeout(res, 10));
      }
      throw new Error(`nobody waited on advisory lock ${gate}`);
    }

    /**
     * A draw by another ledger (another process) whose transaction has locked its rows and keeps its locks until
     * `open()`: its charge row waits for an advisory lock this test holds. `pid` is its backend's.
     */
    async function drawHeldOpen(ledger: Ledger, lease: Reservation, amountNano: bigint, drawId: string) {
      const gate = 7_000 + ++gates;
      const notes = await chargeNotes(getDb());
      let open!: () => void;
      const opened = new Promise<void>((r) => (open = r));
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      const holder = getDb().transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [gate]);
        holding();
        await opened;
      });
      await held;
      const draw = ledger.draw(lease, amountNano, drawId, notes.gated(drawId, gate));
      const pid = await waiterOn(gate);
      return { draw: holder.then(() => draw), pid, open };
    }

    for (const finish of ['release', 'settle'] as const) {
      it(`a ${finish} that waited on a draw of its reservation gives back only what the draw left held`, async () => {
        // Two ledgers: two processes, each with its own batcher and connections.
        const here = createLedger(getDb(), { clock, owner: 'here' });
        const other = createLedger(getDb(), { clock, owner: 'other' });
        const w = await here.createWallet({ credits: 100 }); // one lot of 100,000 nano
        const held: Reservation[] = [];
        // Two holds on the one lot, so a stale release does not drive the lot's reserved balance negative:
        // it silently gives back money the draw charged.
        for (const callId of ['leased', 'neighbour']) {
          const r = await here.reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId });
          if (!r.ok) throw new Error('refused');
          held.push(r.reservation);
        }
        const [lease] = held;

        const d = await drawHeldOpen(other, lease!, 4_000n, `draw-${finish}`);
        // The finish starts its locking statement now (its snapshot sees the hold before the draw) and waits.
        const finished = finish === 'release' ? here.release(lease!) : here.settle(lease!, 1_000n);
        await untilBlockedBy(d.pid);
        d.open();
        const draw = d.draw;

        expect(await draw).toEqual({ chargedNano: 4_000n, shortfallNano: 0n, alreadyFinished: false });
        if (finish === 'release') expect(await finished).toEqual({ releasedNano: 6_000n, alreadyFinished: false });
        else expect(await finished).toEqual({ chargedNano: 1_000n, shortfallNano: 0n, alreadyFinished: false });

        // The reservation's journal: what it charged and gave back is exactly what it reserved.
        const j = await getDb().query<{ kind: string; s: string }>(
          'SELECT kind, sum(amount_nano)::text AS s FROM ledger_journal WHERE reservation_id = $1 GROUP BY kind',
          [lease!.id],
        );
        const byKind = Object.fromEntries(j.rows.map((r) => [r.kind, BigInt(r.s)]));
        const charged = finish === 'release' ? 4_000n : 5_000n;
        expect(byKind).toEqual({ reserve: 10_000n, settle: charged, release: 10_000n - charged });
        const { bal, sum } = await expectJournalAddsUp(getDb(), w.id);
        expect(sum.chargedNano).toBe(charged);
        expect(bal.reservedNano).toBe(10_000n); // the neighbour's hold, untouched
        expect(bal.availableNano).toBe(100_000n - charged - 10_000n);
      });
    }

    for (const owed of [false, true])
      it(`a first try whose intent was kept while it waited on the lock looks for the draw that held it${owed ? ', owed on its lease' : ''}`, async () => {
        // A frozen process's batch decided its draw was a first try, then waited on the rows a replay of that very
        // draw held (its intent was kept in the spool meanwhile, and another process took it for dead).
        const frozen = createLedger(getDb(), { clock, owner: 'frozen' });
        const replayer = createLedger(getDb(), { clock, owner: 'replayer' });
        const notes = await chargeNotes(getDb());
        const w = await replayer.createWallet({ credits: 100 });
        const records = await usageRecordsOf(getDb(), w.id, clock.now());
        const r = await replayer.reserve({
          walletId: w.id,
          vendor: 'b',
          amountNano: 10_000n,
          callId: 'lease:frozen',
        });
        if (!r.ok) throw new Error('refused');
        const callId = `call-kept-${owed}`; // a call's id, which is its draw's
        const rows = owed ? records.rows(`${callId}:frozen`) : notes.recorded(`${callId}:frozen`);
        const replay = await drawHeldOpen(replayer, r.reservation, 4_000n, callId);
        let kept = false;
        const firstTry = frozen.draw(r.reservation, 4_000n, callId, rows, { firstTry: () => !kept });
        await untilBlockedBy(replay.pid);
        kept = true;
        replay.open();
        expect(await replay.draw).toMatchObject({ chargedNano: 4_000n, alreadyFinished: false });
        expect(await firstTry).toMatchObject({ alreadyFinished: true });
        expect(await notes.charged(`${callId}:frozen`)).toEqual([]);
        expect(await records.count(`${callId}:frozen`)).toBe(0);
        const { bal } = await expectJournalAddsUp(getDb(), w.id);
        expect(bal.reservedNano).toBe(6_000n);
      });

    it('a reserve that waited on a draw sees the lot as the draw left it (locked rows are re-read after the wait)', async () => {
      const here = createLedger(getDb(), { clock, owner: 'here' });
      const other = createLedger(getDb(), { clock, owner: 'other' });
      const w = await here.createWallet({ credits: 100 });
      const r = await here.reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId: 'leased' });
      if (!r.ok) throw new Error('refused');
      // 14,000: the whole hold, then 4,000 from the lot's available balance (90,000 before, 86,000 after).
      const d = await drawHeldOpen(other, r.reservation, 14_000n, 'draw-past-hold');
      const reserved = here.reserve({ walletId: w.id, vendor: 'b', amountNano: 90_000n, callId: 'late' });
      await untilBlockedBy(d.pid);
      d.open();
      expect(await d.draw).toEqual({ chargedNano: 14_000n, shortfallNano: 0n, alreadyFinished: false });
      expect(await reserved).toEqual({ ok: false, reason: 'insufficient_credit', availableNano: 86_000n });
      await expectJournalAddsUp(getDb(), w.id);
    });

    it("a wallet whose lots another session holds locked fails its ops alone, after LOCK_WAIT_MS; its batch's others land", async () => {
      const ledger = createLedger(getDb(), { clock, owner: 'here' });
      const [w1, w2] = [await ledger.createWallet({ credits: 100 }), await ledger.createWallet({ credits: 100 })];
      const locker = await getDb().transaction(async (tx) => {
        await tx.query('SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE', [w1.id]);
        // Both reserves in one batch (one queue): W1's waits on the lock, W2's must not wait with it.
        const t0 = Date.now();
        const [r1, r2] = [w1, w2].map((w) => ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId: `c-${w.id}` }));
        const settled = Promise.allSettled([r1, r2]);
        const w2Ms = await r2!.then(() => Date.now() - t0);
        const [s1, s2] = await settled;
        return { r1: s1, r2: s2, w2Ms };
      });
      expect(locker.r1.status === 'rejected' && (locker.r1.reason as { code?: string }).code).toBe('55P03');
      expect(locker.r2.status === 'fulfilled' && locker.r2.value!.ok).toBe(true);
      expect(locker.w2Ms).toBeLessThan(2 * LOCK_WAIT_MS); // one wait on the lock, then its own batch
      // Let go: W1's next reserve lands; nothing of the failed one was written.
      const again = await ledger.reserve({ walletId: w1.id, vendor: 'b', amountNano: 10_000n, callId: 'c-again' });
      expect(again.ok).toBe(true);
      for (const w of [w1, w2]) expect((await expectJournalAddsUp(getDb(), w.id)).bal.reservedNano).toBe(10_000n);
    });

    /** A session holding a table named as the ledger's, in a schema of its own, locked until the returned function. */
    async function tableLockedElsewhere(): Promise<() => Promise<void>> {
      const schema = `elsewhere_${Math.random().toString(36).slice(2, 8)}`;
      await getDb().query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.wallets (id int)`);
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const locker = getDb().transaction(async (tx) => {
        await tx.query(`LOCK TABLE ${schema}.wallets IN ACCESS EXCLUSIVE MODE`);
        holding();
        await released;
      });
      await held;
      return async () => {
        release();
        await locker;
        await getDb().query(`DROP SCHEMA ${schema} CASCADE`);
      };
    }

    for (const elsewhere of [false, true]) {
      it(`a reserve whose wait ended as the other session let go runs again and lands${elsewhere ? ', whatever another schema has locked' : ''}`, async () => {
        // Seen under load: the batch's wait ends (55P03), the other session lets go, and the ledger's look at what
        // was locked (NOWAIT) finds the rows free: a slow holder, whose wallet's calls were refused with 503s. A
        // table lock in another schema (another test's, another application's) stops none of the ledger's writes.
        const w = await createLedger(getDb(), { clock, owner: 'here' }).createWallet({ credits: 100 });
        const unlockElsewhere = elsewhere ? await tableLockedElsewhere() : async () => undefined;
        let holding!: () => void;
        const held = new Promise<void>((r) => (holding = r));
        let letGo!: () => void;
        const lockedUntil = new Promise<void>((r) => (letGo = r));
        const locker = getDb().transaction(async (tx) => {
          await tx.query('SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE', [w.id]);
          holding();
          await lockedUntil;
        });
        await held;
        const db = getDb();
        // The lock goes the moment the batch's wait ends, before the ledger looks: the race, every time.
        const racing: Db = {
          ...db,
          transaction: (fn, opts) =>
            db.transaction(fn, opts).catch(async (e: unknown) => {
              if (opts?.lockTimeoutMs !== undefined && (e as { code?: unknown }).code === '55P03') {
                letGo();
                await locker;
              }
              throw e;
            }),
        };
        let batches = 0;
        const ledger = createLedger(racing, { clock, owner: 'here', onBatch: () => batches++ });
        const reserved = await ledger
          .reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId: 'raced' })
          .finally(unlockElsewhere);
        letGo();
        expect(reserved.ok).toBe(true);
        expect(batches).toBe(2); // the one that waited, and the one that landed
        expect((await expectJournalAddsUp(getDb(), w.id)).bal.reservedNano).toBe(10_000n);
      });
    }

    it("a table lock that stops the ledger's writes is an outage said after one wait, not a look that waits with it", async () => {
      // Found by an attack: the look at the wallet's rows (NOWAIT) still waited for the table itself, as long as the
      // LOCK TABLE was held (a migration's, for minutes), with the batch, its queue and a connection.
      const ledger = createLedger(getDb(), { clock, owner: 'here' });
      const w = await ledger.createWallet({ credits: 100 });
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      const locker = getDb().transaction(async (tx) => {
        await tx.query('LOCK TABLE credit_lots IN EXCLUSIVE MODE');
        holding();
        await released;
      });
      await held;
      const started = Date.now();
      const outcome = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId: 'table' }).then(
        () => null,
        (e: unknown) => e,
      );
      const tookMs = Date.now() - started;
      release();
      await locker;
      expect(outcome).toBeInstanceOf(TablesLocked);
      expect(tookMs).toBeLessThan(3 * LOCK_WAIT_MS);
      expect((await expectJournalAddsUp(getDb(), w.id)).bal.reservedNano).toBe(0n);
    });

    it("a reserve whose wallet's rows stay locked past the wait is refused as the lock's 503, not as a fault", async () => {
      const ledger = createLedger(getDb(), { clock, owner: 'here' });
      const w = await ledger.createWallet({ credits: 100 });
      const refused = await getDb().transaction(async (tx) => {
        await tx.query('SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE', [w.id]);
        return ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId: 'stuck' }).then(
          () => null,
          (e: unknown) => e,
        );
      });
      // No table was locked: the wallet's own lock, which refuses only its calls, not an outage for every wallet.
      expect(refused).not.toBeInstanceOf(TablesLocked);
      expect(toGatewayError(refused).message).toMatch(/locked by another operation.*Nothing was charged/);
      expect((await expectJournalAddsUp(getDb(), w.id)).bal.reservedNano).toBe(0n);
    });

    it("once a wallet's rows were found locked, its ops queue apart: the other wallets' batches stop waiting on them", async () => {
      const ledger = createLedger(getDb(), { clock, owner: 'here' });
      const [w1, w2] = [await ledger.createWallet({ credits: 100 }), await ledger.createWallet({ credits: 100 })];
      const reserve = (walletId: string, callId: string) => ledger.reserve({ walletId, vendor: 'b', amountNano: 1_000n, callId });
      const rounds = await getDb().transaction(async (tx) => {
        await tx.query('SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE', [w1.id]);
        const timed: { w1: PromiseSettledResult<unknown>; w2Ms: number }[] = [];
        // Each round submits one op of each wallet in the same tick, as a burst sharing one queue would.
        for (let round = 0; round < 4; round++) {
          const t0 = Date.now();
          const [r1, r2] = [reserve(w1.id, `w1-${round}`), reserve(w2.id, `w2-${round}`)];
          const w2Ms = await r2.then(() => Date.now() - t0);
          timed.push({ w1: (await Promise.allSettled([r1]))[0]!, w2Ms });
        }
        return timed;
      });
      for (const r of rounds) expect(r.w1.status === 'rejected' && (r.w1.reason as { code?: string }).code).toBe('55P03');
      expect(rounds[0]!.w2Ms).toBeGreaterThanOrEqual(LOCK_WAIT_MS); // the batch that found the lock
      for (const r of rounds.slice(1)) expect(r.w2Ms).toBeLessThan(LOCK_WAIT_MS / 2);
      // The lock gone, W1's next op commits (and W1 shares the queue again); both wallets add up.
      expect((await reserve(w1.id, 'w1-after')).ok).toBe(true);
      for (const w of [w1, w2]) await expectJournalAddsUp(getDb(), w.id);
    });
  },
  ['postgres'],
);
