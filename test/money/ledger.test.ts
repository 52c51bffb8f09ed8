import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { creditsToNano, nanoToCreditsCeil, nanoToCreditsFloor, usdToNano } from '../../engine/core/money.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { chargeNotes } from '../helpers/charge-rows.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp, journalSum } from '../helpers/ledger.ts';
import { VENDORS } from '../helpers/vendors.ts';

describe('money', () => {
  it('converts exactly', () => {
    expect(creditsToNano(5)).toBe(5000n);
    expect(nanoToCreditsFloor(1999n)).toBe(1n);
    expect(nanoToCreditsCeil(1001n)).toBe(2n);
    expect(nanoToCreditsCeil(1000n)).toBe(1n);
    expect(usdToNano(0.07)).toBe(70_000_000n);
    expect(usdToNano('0.000001')).toBe(1000n);
    expect(usdToNano(1e-9)).toBe(1n);
    expect(usdToNano(150)).toBe(150_000_000_000n);
    expect(() => creditsToNano(1.5)).toThrow();
  });
});

describeEachDatabase('ledger', (getDb: () => Db) => {
  const clock = fixedClock('2026-05-01T00:00:00Z');
  const ledger = () => createLedger(getDb(), { clock, owner: 'test-proc', vendors: () => VENDORS, planVendors: () => ['c'] });

  it('settle writes its charge rows in its own transaction: when they are refused, nothing is charged and the hold stays', async () => {
    const l = ledger();
    const notes = await chargeNotes(getDb());
    const w = await l.createWallet({ credits: 10 });
    const r = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 4000n, callId: 'call-rows' });
    if (!r.ok) throw new Error('reserve refused');
    await expect(l.settle(r.reservation, 1500n, notes.refused(r.reservation.id))).rejects.toMatchObject({ code: '22012' });
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 6000n, reservedNano: 4000n });
    const settled = await l.settle(r.reservation, 1500n, notes.noted(r.reservation.id));
    expect(settled.chargedNano).toBe(1500n);
    expect(await notes.charged(r.reservation.id)).toEqual([1500n]);
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 8500n, reservedNano: 0n });
    // A repeat settles nothing and does not write its rows again.
    await l.settle(r.reservation, 1500n, notes.noted(r.reservation.id));
    expect(await notes.charged(r.reservation.id)).toEqual([1500n]);
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('creates wallets with credits, tops up, changes owner', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 50, keySlots: 7, splitsUsage: true, ownerId: 'alice' });
    expect(w.keySlots).toBe(7);
    expect(w.splitsUsage).toBe(true);
    expect(w.ownerId).toBe('alice');
    expect(w.lot?.availableNano).toBe(50_000n);
    const lot = await l.topUp(w.id, { credits: 10, vendors: ['C'] });
    expect(lot.vendors).toEqual(['c']);
    const bal = await l.balance(w.id);
    expect(bal.availableNano).toBe(60_000n);
    expect(bal.lots.map((x) => x.vendors)).toEqual([null, ['c']]);
    expect((await l.setOwner(w.id, 'bob')).ownerId).toBe('bob');
    expect((await l.getWallet(w.id))?.ownerId).toBe('bob');
    await expect(l.setOwner('nope', 'x')).rejects.toMatchObject({ status: 404 });
    await expect(l.topUp(w.id, { credits: 0 })).rejects.toMatchObject({ status: 400 });
    await expect(l.topUp(w.id, { credits: 1, vendors: ['z'] })).rejects.toMatchObject({ status: 400 });
    await expect(l.topUp('nope', { credits: 1 })).rejects.toMatchObject({ status: 404 });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('100 parallel reservations against a wallet covering exactly 10: exactly 10 succeed', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 0 });
    // spread the money over three lots so reservations span lots
    await l.topUp(w.id, { nano: 3_700n });
    await l.topUp(w.id, { nano: 4_100n });
    await l.topUp(w.id, { nano: 2_200n });
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => l.reserve({ walletId: w.id, vendor: 'a', amountNano: 1_000n, callId: `call-${i}` })),
    );
    const ok = results.filter((r) => r.ok);
    expect(ok.length).toBe(10);
    for (const r of results) if (!r.ok) expect(r.reason).toBe('insufficient_credit');
    let bal = await l.balance(w.id);
    expect(bal.availableNano).toBe(0n);
    expect(bal.reservedNano).toBe(10_000n);
    await expectJournalAddsUp(getDb(), w.id);

    // settle half at 400, release the other half; settle amounts exact
    const held = ok.map((r) => (r.ok ? r.reservation : null)!);
    expect(held.some((r) => r.lots.length > 1)).toBe(true);
    const outcomes = await Promise.all(held.map((r, i) => (i % 2 === 0 ? l.settle(r, 400n) : l.release(r))));
    for (let i = 0; i < outcomes.length; i++) {
      if (i % 2 === 0) expect(outcomes[i]).toMatchObject({ chargedNano: 400n, shortfallNano: 0n, alreadyFinished: false });
      else expect(outcomes[i]).toMatchObject({ releasedNano: 1_000n, alreadyFinished: false });
    }
    bal = await l.balance(w.id);
    expect(bal.reservedNano).toBe(0n);
    expect(bal.availableNano).toBe(10_000n - 5n * 400n);
    const { sum } = await expectJournalAddsUp(getDb(), w.id);
    expect(sum.chargedNano).toBe(2_000n);
  });

  it('mixed concurrent reserve/settle/release never overspends and adds up', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 100 }); // 100,000 nano
    await l.topUp(w.id, { credits: 20, vendors: ['c'] });
    let charged = 0n;
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const vendor = i % 3 === 0 ? 'c' : 'b';
        const r = await l.reserve({ walletId: w.id, vendor, amountNano: BigInt(1_000 + i * 97), callId: `m-${i}` });
        if (!r.ok) return;
        if (i % 4 === 0) await l.release(r.reservation);
        else {
          // every 10th call costs more than its reservation (charged as far as the lots cover)
          const actual = i % 10 === 1 ? r.reservation.amountNano + 300n : BigInt(500 + i * 13);
          const s = await l.settle(r.reservation, actual);
          charged += s.chargedNano;
        }
      }),
    );
    const { bal, sum } = await expectJournalAddsUp(getDb(), w.id);
    expect(sum.chargedNano).toBe(charged);
    expect(bal.reservedNano).toBe(0n);
    expect(bal.availableNano).toBe(120_000n - charged);
  });

  it('settle twice and release after settle are no-ops; release twice is a no-op', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 10 });
    const r = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 5_000n, callId: 'x' });
    if (!r.ok) throw new Error('refused');
    expect(await l.settle(r.reservation, 1_234n)).toEqual({ chargedNano: 1_234n, shortfallNano: 0n, alreadyFinished: false });
    expect(await l.settle(r.reservation, 1_234n)).toEqual({ chargedNano: 1_234n, shortfallNano: 0n, alreadyFinished: true });
    expect(await l.settle(r.reservation.id, 9_999n)).toMatchObject({ chargedNano: 1_234n, alreadyFinished: true });
    expect(await l.release(r.reservation)).toEqual({ releasedNano: 0n, alreadyFinished: true });
    expect((await l.balance(w.id)).availableNano).toBe(10_000n - 1_234n);

    const r2 = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 2_000n, callId: 'y' });
    if (!r2.ok) throw new Error('refused');
    expect(await l.release(r2.reservation)).toEqual({ releasedNano: 2_000n, alreadyFinished: false });
    expect(await l.release(r2.reservation)).toEqual({ releasedNano: 0n, alreadyFinished: true });
    expect(await l.settle(r2.reservation, 100n)).toMatchObject({ chargedNano: 0n, alreadyFinished: true });
    // concurrent double settle charges once
    const r3 = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 2_000n, callId: 'z' });
    if (!r3.ok) throw new Error('refused');
    const both = await Promise.all([l.settle(r3.reservation, 700n), l.settle(r3.reservation, 700n), l.release(r3.reservation)]);
    expect(both.filter((b) => !b.alreadyFinished).length).toBe(1);
    const { bal } = await expectJournalAddsUp(getDb(), w.id);
    const charged3 = both[0].alreadyFinished && both[1].alreadyFinished ? 0n : 700n;
    expect(bal.availableNano).toBe(10_000n - 1_234n - charged3);
    await expect(l.settle('res_missing', 1n)).rejects.toMatchObject({ status: 404 });
  });

  it('settle above the reservation charges the excess as far as the lots cover, never negative', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 10 });
    const r = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 3_000n, callId: 'x' });
    if (!r.ok) throw new Error('refused');
    expect(await l.settle(r.reservation, 4_500n)).toEqual({ chargedNano: 4_500n, shortfallNano: 0n, alreadyFinished: false });
    expect((await l.balance(w.id)).availableNano).toBe(5_500n);
    const r2 = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 5_000n, callId: 'y' });
    if (!r2.ok) throw new Error('refused');
    expect(await l.settle(r2.reservation, 8_000n)).toEqual({ chargedNano: 5_500n, shortfallNano: 2_500n, alreadyFinished: false });
    const { bal } = await expectJournalAddsUp(getDb(), w.id);
    expect(bal.availableNano).toBe(0n);
  });

  it('draws restricted lots first, then unrestricted, oldest first; settles restricted first', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 5 }); // unrestricted 5,000
    const cpack = await l.topUp(w.id, { credits: 2, vendors: ['c'] }); // 2,000 for c
    const r = await l.reserve({ walletId: w.id, vendor: 'c', amountNano: 3_000n, callId: 'c1' });
    if (!r.ok) throw new Error('refused');
    expect(r.reservation.lots).toEqual([
      { lotId: cpack.id, amountNano: 2_000n },
      { lotId: w.lot!.id, amountNano: 1_000n },
    ]);
    await l.settle(r.reservation, 2_500n);
    const bal = await l.balance(w.id);
    expect(bal.lots.find((x) => x.id === cpack.id)!.availableNano).toBe(0n);
    expect(bal.lots.find((x) => x.id === w.lot!.id)!.availableNano).toBe(4_500n);
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('vendor restriction: a c-pack serves vendor c only; not_in_plan vs insufficient_credit', async () => {
    const l = ledger();
    const w = await l.createWallet();
    await l.topUp(w.id, { credits: 10, vendors: ['c'] });
    const c = await l.reserve({ walletId: w.id, vendor: 'c', amountNano: 1_000n, callId: 'c' });
    expect(c.ok).toBe(true);
    // only C credits, calling a vendor B model → insufficient_credit (402), nothing charged
    const b = await l.reserve({ walletId: w.id, vendor: 'b', amountNano: 1_000n, callId: 'b' });
    expect(b).toEqual({ ok: false, reason: 'insufficient_credit', availableNano: 0n });
    expect(await l.usableNano(w.id, 'b')).toBe(0n);
    expect(await l.usableNano(w.id, 'c')).toBe(9_000n);

    // only a D pack, calling vendor C → not_in_plan (403), nothing charged
    const w2 = await l.createWallet();
    await l.topUp(w2.id, { credits: 10, vendors: ['d'] });
    const before = await l.balance(w2.id);
    const nc = await l.reserve({ walletId: w2.id, vendor: 'c', amountNano: 1n, callId: 'x' });
    expect(nc).toEqual({ ok: false, reason: 'not_in_plan', availableNano: 0n });
    expect(await l.planAllows(w2.id, 'c')).toBe(false);
    expect(await l.planAllows(w2.id, 'b')).toBe(true);
    expect(await l.balance(w2.id)).toEqual(before);

    // an unrestricted lot, even exhausted, puts C in the plan → insufficient_credit
    const w3 = await l.createWallet({ credits: 1 });
    const r3 = await l.reserve({ walletId: w3.id, vendor: 'a', amountNano: 1_000n, callId: 'a' });
    if (!r3.ok) throw new Error('refused');
    await l.settle(r3.reservation, 1_000n);
    expect(await l.reserve({ walletId: w3.id, vendor: 'c', amountNano: 1n, callId: 'c' })).toMatchObject({
      ok: false,
      reason: 'insufficient_credit',
    });
    expect(await l.planAllows(w3.id, 'c')).toBe(true);

    // an empty wallet: insufficient_credit (top up), not not_in_plan
    const w4 = await l.createWallet();
    expect(await l.reserve({ walletId: w4.id, vendor: 'c', amountNano: 1n, callId: 'c' })).toMatchObject({
      ok: false,
      reason: 'insufficient_credit',
    });
    await expect(l.reserve({ walletId: 'missing', vendor: 'a', amountNano: 1n, callId: 'c' })).rejects.toMatchObject({ status: 404 });
  });

  it('refusal when balance is below the reservation even though some remains', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 3 });
    const r = await l.reserve({ walletId: w.id, vendor: 'b', amountNano: 3_001n, callId: 'x' });
    expect(r).toEqual({ ok: false, reason: 'insufficient_credit', availableNano: 3_000n });
    expect((await l.balance(w.id)).availableNano).toBe(3_000n);
    expect((await journalSum(getDb(), w.id)).reservedTotalNano).toBe(0n);
  });

  it('sweeps expired reservations; extendAll keeps one alive; a late settle still charges', async () => {
    const c = fixedClock('2026-05-01T00:00:00Z');
    const l = createLedger(getDb(), { clock: c, reservationTtlMs: 60_000 });
    const w = await l.createWallet({ credits: 10 });
    const r1 = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 2_000n, callId: '1' });
    const r2 = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 3_000n, callId: '2' });
    if (!r1.ok || !r2.ok) throw new Error('refused');
    expect(await l.extendAll([r2.reservation.id], new Date('2026-05-01T01:00:00Z'))).toEqual(new Set([r2.reservation.id]));
    expect(await l.sweepExpired(new Date('2026-05-01T00:00:59Z'))).toBe(0);
    c.advance(61_000);
    expect(await l.sweepExpired()).toBe(1);
    expect(await l.sweepExpired()).toBe(0);
    let bal = await l.balance(w.id);
    expect(bal.availableNano).toBe(7_000n);
    expect(bal.reservedNano).toBe(3_000n);
    // the call finished after all: late settle charges from available
    expect(await l.settle(r1.reservation, 1_500n)).toEqual({ chargedNano: 1_500n, shortfallNano: 0n, alreadyFinished: false });
    expect(await l.settle(r1.reservation, 1_500n)).toMatchObject({ alreadyFinished: true });
    // release of an expired one: no-op
    expect(await l.release(r1.reservation)).toMatchObject({ alreadyFinished: true });
    bal = await l.balance(w.id);
    expect(bal.availableNano).toBe(5_500n);
    await expectJournalAddsUp(getDb(), w.id);
  });
});
