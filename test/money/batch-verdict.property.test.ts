// The batch verdict, under any mix of ops: random batches of reserves, settles, releases and draws across a few
// wallets, some with charge rows that fail (a grouped row whose SQL fails, a charge callback that throws or fails
// in SQL), some finishing a reservation whose rows were broken by hand (a hold on a lot that is not live), some
// naming the wrong wallet. Run through the real batch on both databases (a batch that cannot commit as a whole is
// rolled back and each op runs again alone), they must give:
//   - every op settled exactly once (its promise resolved or rejected once, counted at the batch), never hanging;
//   - the ops that fail are exactly those given a failure, each with its own error;
//   - every other op's effect committed: its reservation's state, charge and draws, and its charge rows, once;
//   - the journal adding up to each wallet's balance (engine/money/audit.ts, as the tests' auditor runs it);
//   - no hold left behind: a settled or released reservation holds nothing, and once what stays held is
//     released, nothing is reserved anywhere.

import fc from 'fast-check';
import { expect, it, vi } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { type ChargeRows, type ChargeRowWriter, chargeRow } from '../../engine/db/charge-rows.ts';
import type { Db } from '../../engine/db/db.ts';
import { checkLedger } from '../../engine/money/audit.ts';
import { LedgerInvariantBroken } from '../../engine/money/batch-run.ts';
import { createLedger, type Reservation } from '../../engine/money/ledger.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

/** How often the batch settled each op, by its tag (a reserve's call id, a finish's reservation id). */
const settledTimes = new Map<string, number>();
vi.mock('../../engine/money/batch-queues.ts', async (importOriginal) => {
  const orig = await importOriginal<typeof import('../../engine/money/batch-queues.ts')>();
  type Pending = import('../../engine/money/batch-queues.ts').Pending;
  const counted = (p: Pending): Pending => {
    const tag = p.op.kind === 'reserve' ? p.op.callId : p.op.id;
    const once = () => settledTimes.set(tag, (settledTimes.get(tag) ?? 0) + 1);
    return { op: p.op, resolve: (v) => (once(), p.resolve(v)), reject: (e) => (once(), p.reject(e)) };
  };
  return {
    ...orig,
    batchQueues: (opts: Parameters<typeof orig.batchQueues>[0]) =>
      orig.batchQueues({ ...opts, runBatch: (take) => opts.runBatch(() => take().map(counted)) }),
  };
});

/** What a charge writes: nothing, rows (good or failing in SQL), or a callback (writing, throwing, failing in SQL). */
type Rows = 'none' | 'rows' | 'rows-bad';
const ROWS: Rows[] = ['none', 'rows', 'rows-bad'];
const failing = (r: Rows) => r === 'rows-bad';

type Finish =
  | { kind: 'settle'; actual: number; rows: Rows; wrongWallet: boolean }
  | { kind: 'release'; wrongWallet: boolean }
  | { kind: 'draw'; amount: number; rows: Rows }
  /** A settle of a reservation whose hold was moved by hand onto a lot that is not live. */
  | { kind: 'broken' };

interface Held {
  wallet: number;
  amount: number;
  then: Finish;
}

const finishArb = (amount: number): fc.Arbitrary<Finish> =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('settle' as const),
        actual: fc.integer({ min: 0, max: amount + 2_000 }),
        rows: fc.constantFrom(...ROWS),
        wrongWallet: fc.boolean(),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), wrongWallet: fc.boolean() }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('draw' as const),
        amount: fc.integer({ min: 0, max: amount }),
        rows: fc.constantFrom(...ROWS),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'broken' as const }) },
  );

const heldArb = (wallets: number): fc.Arbitrary<Held> =>
  fc
    .record({ wallet: fc.nat(wallets - 1), amount: fc.integer({ min: 1_000, max: 6_000 }) })
    .chain(({ wallet, amount }) => finishArb(amount).map((then) => ({ wallet, amount, then })));

const planArb = fc.integer({ min: 1, max: 3 }).chain((wallets) =>
  fc.record({
    wallets: fc.constant(wallets),
    /** Each wallet's unrestricted credit, besides what its held reservations took. */
    spare: fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: wallets, maxLength: wallets }),
    held: fc.array(heldArb(wallets), { minLength: 1, maxLength: 14 }),
    reserves: fc.array(fc.record({ wallet: fc.nat(wallets - 1), amount: fc.integer({ min: 0, max: 12_000 }) }), { maxLength: 8 }),
    /** Sort keys interleaving the finishes and the reserves in the batch. */
    order: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 22, maxLength: 22 }),
  }),
);

describeEachDatabase('the batch verdict', (getDb: () => Db) => {
  const clock = fixedClock('2026-05-01T00:00:00Z');

  it('settles every op once; exactly the ops given a failure fail, with their own error; the rest commit and add up', async () => {
    await getDb().query('CREATE TABLE IF NOT EXISTS verdict_rows (tag text PRIMARY KEY, charged_nano bigint NOT NULL)');
    /** Writes (tag, charged); its statement fails in SQL, naming the row, when it carries a bad one. */
    const writer: ChargeRowWriter<{ tag: string; bad: boolean }> = {
      name: 'verdict',
      statement: (rows) => ({
        sql: `INSERT INTO verdict_rows (tag, charged_nano)
              SELECT t.tag, t.charged FROM unnest($1::text[], $2::bigint[]) AS t(tag, charged) WHERE $3::int > 0`,
        params: [rows.map((r) => r.item.tag), rows.map((r) => r.chargedNano.toString()), rows.find((r) => r.item.bad)?.item.tag ?? '1'],
      }),
    };
    const ledger = createLedger(getDb(), { clock, owner: 'verdict-test' });
    const db = getDb();

    await fc.assert(
      fc.asyncProperty(planArb, async (plan) => {
        // Wallets: the held reservations' amounts plus spare credit, and a lot of vendor e spent to nothing
        // (not live: a hold moved onto it breaks the batch's invariant).
        const wallets: string[] = [];
        const deadLots: string[] = [];
        for (let k = 0; k < plan.wallets; k++) {
          const w = await ledger.createWallet({ credits: 0 });
          const dead = await ledger.topUp(w.id, { nano: 1n, vendors: ['e'] });
          const z = await ledger.reserve({ walletId: w.id, vendor: 'e', amountNano: 1n, callId: 'e' });
          if (!z.ok) throw new Error('refused');
          await ledger.settle(z.reservation, 1n);
          const need = plan.held.filter((h) => h.wallet === k).reduce((a, h) => a + h.amount, 0);
          await ledger.topUp(w.id, { nano: BigInt(need + plan.spare[k]! + 1) });
          wallets.push(w.id);
          deadLots.push(dead.id);
        }
        const held: Reservation[] = [];
        for (const [i, h] of plan.held.entries()) {
          const r = await ledger.reserve({ walletId: wallets[h.wallet]!, vendor: 'b', amountNano: BigInt(h.amount), callId: `held-${i}` });
          if (!r.ok) throw new Error('refused');
          held.push(r.reservation);
        }
        const moved = new Map<string, string>(); // reservation id → the lot its hold was on
        for (const [i, h] of plan.held.entries()) {
          if (h.then.kind !== 'broken') continue;
          const r = held[i]!;
          moved.set(r.id, r.lots[0]!.lotId);
          await db.query('UPDATE reservation_lots SET lot_id = $2 WHERE reservation_id = $1', [r.id, deadLots[h.wallet]]);
        }

        // The batch: every op submitted in the same tick.
        const rowsOf = (tag: string, mode: Rows): ChargeRows | undefined => {
          switch (mode) {
            case 'none':
              return undefined;
            case 'rows':
            case 'rows-bad':
              return [chargeRow(writer, { tag, bad: mode === 'rows-bad' })];
          }
        };
        settledTimes.clear();
        type Call = { tag: string; run: () => Promise<unknown> };
        const calls: Call[] = [
          ...plan.held.map((h, i): Call => {
            const r = held[i]!;
            const tag = r.id;
            const other = wallets[(h.wallet + 1) % wallets.length]!;
            const t = h.then;
            switch (t.kind) {
              case 'settle':
                return {
                  tag,
                  run: () => ledger.settle(t.wrongWallet ? { ...r, walletId: other } : r, BigInt(t.actual), rowsOf(tag, t.rows)),
                };
              case 'release':
                return { tag, run: () => ledger.release(t.wrongWallet ? { ...r, walletId: other } : r) };
              case 'draw':
                return { tag, run: () => ledger.draw(r, BigInt(t.amount), `draw-${tag}`, rowsOf(tag, t.rows)) };
              case 'broken':
                return { tag, run: () => ledger.settle(r, 1n, rowsOf(tag, 'rows')) };
            }
          }),
          ...plan.reserves.map(
            (x, i): Call => ({
              tag: `new-${wallets[0]}-${i}`,
              run: () =>
                ledger.reserve({
                  walletId: wallets[x.wallet]!,
                  vendor: 'b',
                  amountNano: BigInt(x.amount),
                  callId: `new-${wallets[0]}-${i}`,
                }),
            }),
          ),
        ];
        const order = calls.map((_, n) => n).sort((a, b) => plan.order[a]! - plan.order[b]! || a - b);
        const pending = new Array<Promise<unknown>>(calls.length);
        for (const n of order) pending[n] = calls[n]!.run();
        let timer: NodeJS.Timeout | undefined;
        const hung = new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), 10_000)));
        const out = await Promise.race([Promise.allSettled(pending), hung]);
        clearTimeout(timer);
        expect(out, 'an op of the batch never settled').not.toBe('hung');
        const results = out as PromiseSettledResult<unknown>[];

        // Settled exactly once each, at the batch.
        for (const c of calls) expect(settledTimes.get(c.tag), `${c.tag} settled`).toBe(1);
        expect(settledTimes.size).toBe(calls.length);

        // Exactly the ops given a failure fail, each with its own error; the others' effects are committed.
        const rowsWritten = new Map(
          (await db.query<{ tag: string; charged_nano: string }>('SELECT tag, charged_nano::text FROM verdict_rows')).rows.map((r) => [
            r.tag,
            BigInt(r.charged_nano),
          ]),
        );
        let charged = 0n;
        for (const [i, h] of plan.held.entries()) {
          const r = held[i]!;
          const o = results[i]!;
          const t = h.then;
          const row = (
            await db.query<{ state: string; amount_nano: string; charged_nano: string | null }>(
              'SELECT state, amount_nano::text, charged_nano::text FROM reservations WHERE id = $1',
              [r.id],
            )
          ).rows[0]!;
          const draws = (
            await db.query<{ amount_nano: string }>('SELECT amount_nano::text FROM reservation_draws WHERE reservation_id = $1', [r.id])
          ).rows;
          const mode = t.kind === 'settle' || t.kind === 'draw' ? t.rows : t.kind === 'broken' ? 'rows' : 'none';
          const where = `${t.kind} ${r.id} (${mode})`;
          if (t.kind === 'broken' || failing(mode)) {
            expect(o.status, where).toBe('rejected');
            const reason = (o as PromiseRejectedResult).reason as Error;
            if (t.kind === 'broken') {
              expect(reason, where).toBeInstanceOf(LedgerInvariantBroken);
              expect((reason as LedgerInvariantBroken).opId, where).toBe(r.id);
            } else expect(reason.message, where).toContain(r.id); // the SQL error names this op's own value
            // Nothing of it committed: still held, whole, uncharged, no draw, no rows.
            expect(row, where).toEqual({ state: 'held', amount_nano: String(h.amount), charged_nano: null });
            expect(draws, where).toEqual([]);
            expect(rowsWritten.has(r.id), where).toBe(false);
            continue;
          }
          expect(o.status, where).toBe('fulfilled');
          const v = (o as PromiseFulfilledResult<{ chargedNano?: bigint; shortfallNano?: bigint; alreadyFinished: boolean }>).value;
          expect(v.alreadyFinished, where).toBe(false);
          if (t.kind === 'release') {
            expect(v, where).toEqual({ releasedNano: BigInt(h.amount), alreadyFinished: false });
            expect(row.state, where).toBe('released');
            continue;
          }
          const asked = BigInt(t.kind === 'settle' ? t.actual : t.amount);
          expect(v.chargedNano! + v.shortfallNano!, where).toBe(asked);
          if (asked <= BigInt(h.amount)) expect(v.chargedNano, where).toBe(asked);
          charged += v.chargedNano!;
          if (t.kind === 'settle') expect(row, where).toMatchObject({ state: 'settled', charged_nano: String(v.chargedNano) });
          else {
            expect(row, where).toMatchObject({ state: 'held', amount_nano: String(BigInt(h.amount) - asked) });
            expect(draws, where).toEqual([{ amount_nano: String(v.chargedNano) }]);
          }
          if (mode === 'none') expect(rowsWritten.has(r.id), where).toBe(false);
          else expect(rowsWritten.get(r.id), where).toBe(v.chargedNano);
        }
        const newHolds: Reservation[] = [];
        for (const [j, x] of plan.reserves.entries()) {
          const o = results[plan.held.length + j]!;
          expect(o.status).toBe('fulfilled');
          const v = (o as PromiseFulfilledResult<{ ok: boolean; reservation?: Reservation; availableNano?: bigint }>).value;
          if (v.ok) {
            const row = (
              await db.query<{ state: string; amount_nano: string }>('SELECT state, amount_nano::text FROM reservations WHERE id = $1', [
                v.reservation!.id,
              ])
            ).rows[0];
            expect(row).toEqual({ state: 'held', amount_nano: String(x.amount) });
            newHolds.push(v.reservation!);
          } else expect(v.availableNano! < BigInt(x.amount)).toBe(true);
        }
        expect(held.filter((r) => rowsWritten.has(r.id)).length).toBe(
          plan.held.filter((h) => (h.then.kind === 'settle' || h.then.kind === 'draw') && h.then.rows === 'rows').length,
        );

        // The journal adds up to every wallet's balance; what the batch charged is what the journals charged.
        const audit = await checkLedger(db, { walletIds: wallets, heldExpiredBefore: null });
        expect(audit.examples).toEqual({});
        expect(audit.ok).toBe(true);
        let journalCharged = 0n;
        for (const w of wallets) journalCharged += (await expectJournalAddsUp(db, w)).sum.chargedNano;
        expect(journalCharged).toBe(charged + BigInt(wallets.length)); // and the vendor e settles of the setup

        // No hold left behind: finished reservations hold nothing; release what stays held (the broken holds put
        // back first), and nothing is reserved anywhere.
        for (const [id, lot] of moved) await db.query('UPDATE reservation_lots SET lot_id = $2 WHERE reservation_id = $1', [id, lot]);
        const stillHeld = (
          await db.query<{ id: string }>(`SELECT id FROM reservations WHERE wallet_id = ANY($1::text[]) AND state = 'held'`, [wallets])
        ).rows.map((r) => r.id);
        await Promise.all(stillHeld.map((id) => ledger.release(id)));
        for (const w of wallets) {
          const { bal } = await expectJournalAddsUp(db, w);
          expect(bal.reservedNano).toBe(0n);
          for (const lot of bal.lots) expect(lot.reservedNano).toBe(0n);
        }
        expect((await checkLedger(db, { walletIds: wallets, heldExpiredBefore: null })).examples).toEqual({});
        expect(newHolds.every((r) => stillHeld.includes(r.id))).toBe(true);
      }),
      // A batch that never settles leaves its loop holding the database, and every run after it waits 10 s:
      // the time limit stops shrinking then, and reports the counterexample found, before the test's timeout.
      { numRuns: 40, interruptAfterTimeLimit: 60_000 },
    );
  }, 120_000);
});
