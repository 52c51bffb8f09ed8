// A charge comes before its charge rows: rows the database refuses for good would undo the charge on
// every attempt (the call unpaid however often it is retried), so the charge is written again with fewer rows,
// and the refusal logged. Other failures are not a reason to drop rows.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { type ChargeRowWriter, chargeRow } from '../../engine/db/charge-rows.ts';
import type { Db } from '../../engine/db/db.ts';
import { ChargeRowLadder, chargeFirst } from '../../engine/money/charge-first.ts';
import type { LeaseHold } from '../../engine/money/leases.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { budgetLeases } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { leaseSettings } from '../helpers/lease-settings.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

/** A writer whose statement the database refuses for good (division by zero: SQLSTATE 22012). */
const refused: ChargeRowWriter<null> = {
  name: 'refused',
  statement: () => ({ sql: "INSERT INTO charge_first_notes (call_id, charged) SELECT 'refused', 1 / 0", params: [] }),
};
/** A writer that records which call ids it wrote, in a table of the test's own. */
const noted: ChargeRowWriter<string> = {
  name: 'noted',
  statement: (rows) => ({
    sql: 'INSERT INTO charge_first_notes (call_id, charged) SELECT * FROM unnest($1::text[], $2::bigint[])',
    params: [rows.map((r) => r.item), rows.map((r) => r.chargedNano.toString())],
  }),
};

describeEachDatabase('charge first, charge rows second', (getDb: () => Db) => {
  const setup = async () => {
    await getDb().query('CREATE TABLE IF NOT EXISTS charge_first_notes (call_id text, charged bigint)');
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'charge-first-test' });
    const w = await ledger.createWallet({ credits: 100_000 });
    const errors: object[] = [];
    const log = { error: (o: object) => void errors.push(o) };
    const notes = async () =>
      (await getDb().query<{ call_id: string; charged: string }>('SELECT call_id, charged::text FROM charge_first_notes ORDER BY call_id'))
        .rows;
    return { ledger, walletId: w.id, errors, log, notes };
  };

  it('a settle whose rows are refused for good is charged with fewer rows, and the refusal is logged', async () => {
    const s = await setup();
    const r = await s.ledger.reserve({ walletId: s.walletId, vendor: 'b', amountNano: 50_000n, callId: 'exact-1' });
    if (!r.ok) throw new Error('refused');
    const rows = new ChargeRowLadder(
      [[chargeRow(noted, 'exact-1'), chargeRow(refused, null)], [chargeRow(noted, 'exact-1')], undefined],
      s.log,
      'exact-1',
    );
    const out = await chargeFirst(rows, (a) => s.ledger.settle(r.reservation, 30_000n, a));
    expect(out.chargedNano).toBe(30_000n);
    expect(await s.notes()).toContainEqual({ call_id: 'exact-1', charged: '30000' }); // the rows that could be written were
    expect(s.errors).toHaveLength(1);
    expect(s.errors[0]).toMatchObject({ callId: 'exact-1', err: { code: '22012' } });
    await expectJournalAddsUp(getDb(), s.walletId);
  });

  it('a row too long for its index (SQLSTATE 54000) is refused for good too: the charge lands with fewer rows', async () => {
    const s = await setup();
    await getDb().query('CREATE TABLE IF NOT EXISTS charge_first_ids (id text PRIMARY KEY)');
    // Hex digits compress to about half, so 12,800 of them stay past the index's 2,704 bytes.
    const unindexable: ChargeRowWriter<null> = {
      name: 'unindexable',
      statement: () => ({
        sql: "INSERT INTO charge_first_ids SELECT string_agg(md5(i::text), '') FROM generate_series(1, 400) AS i",
        params: [],
      }),
    };
    const r = await s.ledger.reserve({ walletId: s.walletId, vendor: 'b', amountNano: 50_000n, callId: 'exact-54' });
    if (!r.ok) throw new Error('refused');
    const rows = new ChargeRowLadder([[chargeRow(noted, 'exact-54'), chargeRow(unindexable, null)], undefined], s.log, 'exact-54');
    expect((await chargeFirst(rows, (a) => s.ledger.settle(r.reservation, 20_000n, a))).chargedNano).toBe(20_000n);
    expect(s.errors).toHaveLength(1);
    expect(s.errors[0]).toMatchObject({ callId: 'exact-54', err: { code: '54000' } });
    expect((await s.ledger.balance(s.walletId)).reservedNano).toBe(0n);
    await expectJournalAddsUp(getDb(), s.walletId);
  });

  it('a failure that is not a refusal of the rows drops nothing: the settle fails and its hold stays', async () => {
    const s = await setup();
    const r = await s.ledger.reserve({ walletId: s.walletId, vendor: 'b', amountNano: 50_000n, callId: 'exact-2' });
    if (!r.ok) throw new Error('refused');
    const flaky: ChargeRowWriter<null> = {
      name: 'flaky',
      statement: () => {
        throw new Error('connection lost');
      },
    };
    const rows = new ChargeRowLadder([[chargeRow(flaky, null)], undefined], s.log, 'exact-2');
    await expect(chargeFirst(rows, (a) => s.ledger.settle(r.reservation, 30_000n, a))).rejects.toThrow('connection lost');
    expect(s.errors).toHaveLength(0);
    expect((await s.ledger.balance(s.walletId)).reservedNano).toBe(50_000n);
  });

  it('a call admitted on a lease whose rows are refused for good is charged all the same, behind the reply', async () => {
    const s = await setup();
    const book = budgetLeases(s.ledger, () => leaseSettings({}));
    try {
      let h: LeaseHold | null = null;
      for (let i = 0; i < 200 && !h; i++) {
        h = await book.holdOrWait(s.walletId, 'b', 10_000n);
        if (!h) await new Promise((r) => setTimeout(r, 10));
      }
      expect(h).not.toBeNull();
      const rows = new ChargeRowLadder(
        [[chargeRow(noted, 'leased-1'), chargeRow(refused, null)], [chargeRow(noted, 'leased-1')], undefined],
        s.log,
        'leased-1',
      );
      expect(await book.charge(h!, 7_000n, 'leased-1', rows).committed).toBe(7_000n);
      await book.flushed();
    } finally {
      await book.close(5_000);
    }
    const draw = await getDb().query<{ amount_nano: string }>(`SELECT amount_nano::text FROM reservation_draws WHERE draw_id = 'leased-1'`);
    expect(draw.rows).toEqual([{ amount_nano: '7000' }]);
    expect(await s.notes()).toContainEqual({ call_id: 'leased-1', charged: '7000' });
    expect(s.errors).toHaveLength(1);
    expect(book.stats().pendingDraws).toBe(0);
    await expectJournalAddsUp(getDb(), s.walletId);
  });
});
