// Lots that expire, in the ledger (PGlite and PostgreSQL), with a clock moved by hand: a call admitted before a lot's
// expiry is charged from its hold there, whether the hold is its own or its lease's (the call was admitted with money
// that existed); the expiry pass keeps on the lot what a lease's calls in flight hold and voids the rest; what a hold
// gives back is expired by the next pass; a hold is never placed on an expired lot; the journal and the ledger audit
// add up after each step.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { checkLedger } from '../../engine/money/audit.ts';
import { createLedger, type Reservation } from '../../engine/money/ledger.ts';
import { expireDueLots, startLotExpiry, TOLD_AFTER_MS } from '../../engine/money/lot-expiry.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { VENDORS } from '../helpers/vendors.ts';

const DAY = 86_400_000;
const M = 1_000_000n; // nano

describeEachDatabase('lots that expire', (getDb: () => Db) => {
  const clock = fixedClock('2026-03-01T00:00:00Z');
  const ledger = () => createLedger(getDb(), { clock, owner: 'test-proc', vendors: () => VENDORS });
  const expiring = () => new Date(clock.now().getTime() + DAY);
  const pass = async () => {
    const failures: unknown[] = [];
    const done = await expireDueLots(getDb(), 'test-proc', clock.now(), (e) => failures.push(e));
    expect(failures).toEqual([]);
    return done;
  };
  const addsUp = async (walletId: string) => {
    await expectJournalAddsUp(getDb(), walletId);
    const audit = await checkLedger(getDb(), { walletIds: [walletId], heldExpiredBefore: null });
    expect(audit.failures).toEqual({ wallet_journal: 0, lot_journal: 0, negative_balance: 0, hold_lots: 0 });
  };
  /** A wallet whose one lot expires in a day, and a hold of `holdNano` on it under `callId`. */
  const heldOnTermLot = async (lotNano: bigint, holdNano: bigint, callId: string) => {
    const l = ledger();
    const w = await l.createWallet();
    const soon = await l.topUp(w.id, { nano: lotNano, expiresAt: expiring() });
    const r = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: holdNano, callId });
    if (!r.ok) throw new Error('refused');
    return { l, w, soon, r };
  };
  const held = async (r: Reservation) =>
    (
      await getDb().query<{ lot_id: string; amount_nano: string }>(
        'SELECT lot_id, amount_nano::text FROM reservation_lots WHERE reservation_id = $1',
        [r.id],
      )
    ).rows;

  it('refuses an expiry not after now; a hold is never placed on an expired lot', async () => {
    const l = ledger();
    const w = await l.createWallet();
    await expect(l.topUp(w.id, { nano: 10n * M, expiresAt: clock.now() })).rejects.toMatchObject({ status: 400, param: 'expires_at' });
    const lot = await l.topUp(w.id, { nano: 10n * M, expiresAt: expiring() });
    clock.advance(DAY);
    expect(await l.usableNano(w.id, 'a')).toBe(0n);
    const r = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: M, callId: 'late' });
    expect(r).toMatchObject({ ok: false, reason: 'insufficient_credit', availableNano: 0n });
    expect((await pass()).map((e) => [e.lotId, e.expiredNano])).toEqual([[lot.id, 10n * M]]);
    expect(await pass()).toEqual([]); // a repeat moves nothing
    await addsUp(w.id);
  });

  it("a lease's calls in flight at its lot's expiry are charged from it; the pass keeps what they hold, voids the rest", async () => {
    const l = ledger();
    const w = await l.createWallet();
    const soon = await l.topUp(w.id, { nano: 4n * M, expiresAt: expiring() });
    const keeps = await l.topUp(w.id, { nano: 10n * M });
    const r = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 6n * M, callId: 'lease:test-proc' });
    if (!r.ok) throw new Error('refused');
    expect(r.reservation.lots).toEqual([
      { lotId: soon.id, amountNano: 4n * M, expiresAt: soon.expiresAt },
      { lotId: keeps.id, amountNano: 2n * M },
    ]);
    await l.draw(r.reservation, M, 'call-before'); // before the expiry: from the soonest lot
    // Its process said what the lease's calls in flight hold (a lapsed lease admits no more: all were admitted before).
    await getDb().query('UPDATE reservations SET in_flight_nano = $2 WHERE id = $1', [r.reservation.id, String((3n * M) / 2n)]);
    clock.advance(DAY);
    await l.draw(r.reservation, M, 'call-after'); // admitted before it, answered after: still the term's money
    const lots = () => l.balance(w.id).then((b) => new Map(b.lots.map((x) => [x.id, x])));
    expect((await lots()).get(soon.id)).toMatchObject({ availableNano: 0n, reservedNano: 2n * M });
    expect((await lots()).get(keeps.id)).toMatchObject({ availableNano: 8n * M, reservedNano: 2n * M });

    const [expiry] = await pass();
    expect(expiry).toMatchObject({ lotId: soon.id, expiredNano: M / 2n, voidedNano: M / 2n });
    expect((await lots()).get(soon.id)).toMatchObject({ availableNano: 0n, reservedNano: (3n * M) / 2n, expiredNano: M / 2n });
    expect(await held(r.reservation)).toEqual(
      expect.arrayContaining([
        { lot_id: soon.id, amount_nano: String((3n * M) / 2n) },
        { lot_id: keeps.id, amount_nano: String(2n * M) },
      ]),
    );
    await l.draw(r.reservation, M, 'call-later'); // in flight at the pass: from what it kept
    await l.release(r.reservation); // the calls ended: what was kept for no call goes back, and expires next
    expect((await lots()).get(keeps.id)).toMatchObject({ availableNano: 10n * M, reservedNano: 0n });
    expect((await pass()).map((e) => [e.lotId, e.expiredNano])).toEqual([[soon.id, M / 2n]]);
    expect((await lots()).get(soon.id)).toMatchObject({ availableNano: 0n, reservedNano: 0n, expiredNano: M });
    const { sum } = await expectJournalAddsUp(getDb(), w.id);
    expect(sum.chargedNano).toBe(3n * M);
    expect(sum.expiredNano).toBe(M);
    await addsUp(w.id);
  });

  it("the timer's pass waits until a lease's last calls before the expiry are told, and keeps what they hold", async () => {
    const { l, w, soon, r } = await heldOnTermLot(4n * M, 4n * M, 'lease:test-proc');
    const expired: { lotId: string; expiredNano: bigint; voidedNano: bigint }[] = [];
    const failures: unknown[] = [];
    const stop = startLotExpiry({
      db: getDb(),
      owner: 'test-proc',
      clock,
      intervalMs: 10,
      report: (e) => failures.push(e),
      expired: (e) => expired.push(e),
    });
    try {
      // Just past the expiry, a call the lease admitted just before it is not yet told: the pass leaves the lot.
      clock.advance(DAY + TOLD_AFTER_MS / 2);
      await new Promise((done) => setTimeout(done, 150));
      expect(expired).toEqual([]);
      await getDb().query('UPDATE reservations SET in_flight_nano = $2 WHERE id = $1', [r.reservation.id, String(M)]);
      clock.advance(TOLD_AFTER_MS);
      for (let waited = 0; expired.length === 0 && waited < 100; waited++) await new Promise((done) => setTimeout(done, 20));
    } finally {
      stop();
    }
    expect(failures).toEqual([]);
    expect(expired).toEqual([expect.objectContaining({ lotId: soon.id, expiredNano: 3n * M, voidedNano: 3n * M })]);
    await l.draw(r.reservation, M, 'call-just-before'); // charged from what the pass kept for it
    await l.release(r.reservation);
    const { sum } = await expectJournalAddsUp(getDb(), w.id);
    expect(sum.chargedNano).toBe(M);
    await addsUp(w.id);
  });

  it("a call's own hold on a lot that expires while it runs is charged as held; what it gives back expires at the next pass", async () => {
    const { l, w, soon, r } = await heldOnTermLot(5n * M, 3n * M, 'own');
    clock.advance(DAY);
    expect((await pass())[0]).toMatchObject({ lotId: soon.id, expiredNano: 2n * M, voidedNano: 0n });
    const settled = await l.settle(r.reservation, M);
    expect(settled).toMatchObject({ chargedNano: M, shortfallNano: 0n });
    expect((await l.balance(w.id)).lots[0]).toMatchObject({ availableNano: 2n * M, reservedNano: 0n });
    expect((await l.balance(w.id)).availableNano).toBe(2n * M); // raw columns: views leave it out (spendable.ts)
    expect((await pass())[0]).toMatchObject({ lotId: soon.id, expiredNano: 2n * M });
    const { sum } = await expectJournalAddsUp(getDb(), w.id);
    expect(sum).toMatchObject({ toppedUpNano: 5n * M, chargedNano: M, expiredNano: 4n * M, availableNano: 0n });
    await addsUp(w.id);
  });
});
