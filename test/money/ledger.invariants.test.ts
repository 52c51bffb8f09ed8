// A move whose decision finds the ledger's rows inconsistent (a hold larger than its lot has reserved, a hold
// on a lot that is not live: a bug, or a row changed by hand) fails alone, with LedgerInvariantBroken, logged
// by the ledger. The other wallets' moves of its batch commit, and the sweeper still releases every other
// expired hold. The rows are corrupted here with SQL, as nothing in the ledger can make them so.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { LedgerInvariantBroken } from '../../engine/money/batch-run.ts';
import { createLedger, type Ledger, type Reservation } from '../../engine/money/ledger.ts';
import { startSweeper } from '../../engine/money/sweep.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

describeEachDatabase('ledger invariants', (getDb: () => Db) => {
  const logged = () => {
    const entries: { o: Record<string, unknown>; m: string }[] = [];
    return { entries, log: { error: (o: object, m: string) => void entries.push({ o: o as Record<string, unknown>, m }) } };
  };
  const reserve = async (l: Ledger, walletId: string, vendor: string, amountNano: bigint): Promise<Reservation> => {
    const r = await l.reserve({ walletId, vendor, amountNano, callId: `c-${amountNano}` });
    if (!r.ok) throw new Error(`refused: ${r.reason}`);
    return r.reservation;
  };
  /** The reservation now holds `extra` more on its lot than the lot has reserved. */
  const inflateHold = (r: Reservation, extra: bigint) =>
    getDb().query('UPDATE reservation_lots SET amount_nano = amount_nano + $2::bigint WHERE reservation_id = $1', [r.id, extra.toString()]);
  /** The reservation also holds `amount` on a lot of its wallet with nothing left in it (not live, so never locked). */
  async function holdOnDeadLot(l: Ledger, r: Reservation, amount: bigint) {
    const lot = await l.topUp(r.walletId, { nano: 1_000n, vendors: ['a'] });
    const spent = await reserve(l, r.walletId, 'a', 1_000n); // the restricted lot is drawn first: all of it
    expect(spent.lots).toEqual([{ lotId: lot.id, amountNano: 1_000n }]);
    await l.settle(spent, 1_000n);
    await getDb().query('INSERT INTO reservation_lots (reservation_id, lot_id, amount_nano) VALUES ($1, $2, $3::bigint)', [
      r.id,
      lot.id,
      amount.toString(),
    ]);
  }
  const brokenBy = (r: Reservation, kind: string, cause: string) => ({
    status: 'rejected',
    reason: expect.objectContaining({
      constructor: LedgerInvariantBroken,
      kind,
      opId: r.id,
      walletId: r.walletId,
      cause: expect.objectContaining({ message: expect.stringContaining(cause) }),
    }),
  });

  it('a move that breaks an invariant fails alone; the other moves of its batch, of its wallet and others, commit', async () => {
    const sizes: number[] = [];
    const { entries, log } = logged();
    const l = createLedger(getDb(), { clock: fixedClock('2026-05-01T00:00:00Z'), owner: 'inv', log, onBatch: (n) => sizes.push(n) });
    const [w1, w2, w3] = [
      await l.createWallet({ credits: 10 }),
      await l.createWallet({ credits: 10 }),
      await l.createWallet({ credits: 10 }),
    ];
    const inflated = await reserve(l, w1.id, 'b', 2_000n);
    // Its lots now hold 52,000 for a reservation of 2,000: caught before any lot is moved (the hold_lots invariant).
    await inflateHold(inflated, 50_000n);
    const deadHeld = await reserve(l, w3.id, 'b', 2_000n);
    await holdOnDeadLot(l, deadHeld, 500n);
    const [h2, d2] = [await reserve(l, w2.id, 'b', 3_000n), await reserve(l, w2.id, 'b', 2_000n)];

    sizes.length = 0;
    // Submitted in the same tick: one batch (the draw has a queue of its own on PostgreSQL).
    const out = await Promise.allSettled([
      l.release(inflated),
      l.settle(h2, 1_000n),
      l.reserve({ walletId: w2.id, vendor: 'b', amountNano: 4_000n, callId: 'new-2' }),
      l.settle(deadHeld, 100n),
      l.reserve({ walletId: w1.id, vendor: 'b', amountNano: 1_000n, callId: 'new-1' }), // the broken wallet's other moves go on
      l.release(d2),
    ]);
    expect(sizes[0]).toBe(6);
    expect(out[0]).toMatchObject(brokenBy(inflated, 'release', 'holds 2000, its lots 52000'));
    expect(out[1]).toMatchObject({ status: 'fulfilled', value: { chargedNano: 1_000n, alreadyFinished: false } });
    expect(out[2]).toMatchObject({ status: 'fulfilled', value: { ok: true } });
    expect(out[3]).toMatchObject(brokenBy(deadHeld, 'settle', 'which is not live'));
    expect(out[4]).toMatchObject({ status: 'fulfilled', value: { ok: true } });
    expect(out[5]).toMatchObject({ status: 'fulfilled', value: { releasedNano: 2_000n } });
    // Each broken move said so in the log, with its reservation and wallet.
    expect(entries.map((e) => [e.o.reservationId, e.o.walletId, e.o.err instanceof LedgerInvariantBroken])).toEqual([
      [inflated.id, w1.id, true],
      [deadHeld.id, w3.id, true],
    ]);
    expect(await l.balance(w2.id)).toMatchObject({ availableNano: 10_000n - 1_000n - 4_000n, reservedNano: 4_000n });
    await expectJournalAddsUp(getDb(), w2.id);
    // The broken reservations moved nothing: still held, uncharged.
    const rows = await getDb().query<{ id: string; state: string }>(
      'SELECT id, state FROM reservations WHERE id = ANY($1::text[]) ORDER BY id',
      [[inflated.id, deadHeld.id]],
    );
    expect(rows.rows.map((r) => r.state)).toEqual(['held', 'held']);

    // Draws share a batch too: a draw on the inflated hold fails on the same invariant, alone (the database's
    // CHECK would have failed the whole batch at its write).
    const h2b = await reserve(l, w2.id, 'b', 1_000n);
    entries.length = 0;
    const draws = await Promise.allSettled([l.draw(inflated, 3_000n, 'draw-broken'), l.draw(h2b, 600n, 'draw-fine')]);
    expect(draws[0]).toMatchObject(brokenBy(inflated, 'draw', 'holds 2000, its lots 52000'));
    expect(draws[1]).toMatchObject({ status: 'fulfilled', value: { chargedNano: 600n, shortfallNano: 0n } });
    expect(entries.map((e) => e.o.reservationId)).toEqual([inflated.id]);
    await expectJournalAddsUp(getDb(), w2.id);
  });

  it('the sweeper reports an expiry that breaks an invariant, with its reservation and wallet, and releases the other wallets’ expired holds', async () => {
    // Before the first test's reservations (corrupted too) expire, so that this sweep does not meet them.
    const clock = fixedClock('2026-04-01T00:00:00Z');
    const l = createLedger(getDb(), { clock, owner: 'sweep', reservationTtlMs: 60_000 });
    const wallets = [await l.createWallet({ credits: 10 }), await l.createWallet({ credits: 10 }), await l.createWallet({ credits: 10 })];
    const held: Reservation[] = [];
    for (const w of wallets) held.push(await reserve(l, w.id, 'b', 2_500n));
    await inflateHold(held[1]!, 10_000n);
    clock.advance(61_000);
    const reported: { err: unknown; expire?: { reservationId: string; walletId: string } | undefined }[] = [];
    const stop = startSweeper(l, 20, (err, expire) => void reported.push({ err, expire }));
    try {
      for (let i = 0; i < 200 && reported.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    } finally {
      stop();
    }
    expect(reported[0]!.expire).toEqual({ reservationId: held[1]!.id, walletId: wallets[1]!.id });
    expect(reported[0]!.err).toBeInstanceOf(LedgerInvariantBroken);
    expect(reported.every((r) => r.expire?.reservationId === held[1]!.id)).toBe(true);
    for (const w of [wallets[0], wallets[2]]) {
      expect(await l.balance(w!.id)).toMatchObject({ availableNano: 10_000n, reservedNano: 0n });
      await expectJournalAddsUp(getDb(), w!.id);
    }
    // Called directly without onError or a log: the others are swept first, then the failure is thrown.
    const r4 = await reserve(l, wallets[0]!.id, 'b', 1_000n);
    clock.advance(61_000);
    await expect(l.sweepExpired()).rejects.toBeInstanceOf(LedgerInvariantBroken);
    const row = await getDb().query<{ state: string }>('SELECT state FROM reservations WHERE id = $1', [r4.id]);
    expect(row.rows[0]!.state).toBe('expired');
  });
});
