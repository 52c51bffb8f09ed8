// The batched ledger: concurrent reserves, settles and releases share one transaction (of one wallet or of
// the wallets sharing a queue), and the money stays exactly what one transaction per call gave.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger, type Ledger, type Reservation } from '../../engine/money/ledger.ts';
import { chargeNotes } from '../helpers/charge-rows.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp, journalSum } from '../helpers/ledger.ts';

/** A small deterministic PRNG (mulberry32). */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: T[]) => xs[Math.floor(next() * xs.length)]!,
  };
}

/** A wallet with four lots: unrestricted 100,000 + 30,000, a vendor-c pack 20,000, a vendor-a pack 15,000. */
async function fundedWallet(l: Ledger) {
  const w = await l.createWallet({ credits: 0 });
  await l.topUp(w.id, { nano: 100_000n });
  await l.topUp(w.id, { nano: 20_000n, vendors: ['c'] });
  await l.topUp(w.id, { nano: 15_000n, vendors: ['a'] });
  await l.topUp(w.id, { nano: 30_000n });
  return w.id;
}
const FUNDED = 165_000n;

describeEachDatabase('ledger batches', (getDb: () => Db, kind) => {
  const clock = fixedClock('2026-05-01T00:00:00Z');
  const batchLedger = () => {
    const sizes: number[] = [];
    const l = createLedger(getDb(), { clock, owner: 'batch-test', onBatch: (n) => sizes.push(n) });
    return { l, sizes };
  };

  it('200 concurrent mixed reserves, settles and releases with random amounts never overspend and add up', async () => {
    const { l, sizes } = batchLedger();
    const walletId = await fundedWallet(l);
    const r = rng(42);
    const plan = Array.from({ length: 200 }, () => ({
      vendor: r.pick(['a', 'b', 'c']),
      amount: BigInt(r.int(0, 4_000)),
      // biome-ignore lint/suspicious/noThenProperty: a plain record of the plan, never awaited
      then: r.pick(['settle', 'settle', 'release', 'over', 'twice'] as const),
      actual: BigInt(r.int(0, 4_000)),
    }));
    let charged = 0n;
    let heldPeak = 0n;
    let held = 0n;
    const refusals: bigint[] = [];
    await Promise.all(
      plan.map(async (p, i) => {
        const res = await l.reserve({ walletId, vendor: p.vendor!, amountNano: p.amount, callId: `mix-${i}` });
        if (!res.ok) {
          expect(res.reason).toBe('insufficient_credit');
          refusals.push(res.availableNano);
          return;
        }
        expect(res.reservation.lots.reduce((a, x) => a + x.amountNano, 0n)).toBe(p.amount);
        held += p.amount;
        heldPeak = held > heldPeak ? held : heldPeak;
        if (p.then === 'release') {
          expect(await l.release(res.reservation)).toEqual({ releasedNano: p.amount, alreadyFinished: false });
        } else {
          const actual = p.then === 'over' ? p.amount + p.actual : p.actual < p.amount ? p.actual : p.amount;
          const s = await l.settle(res.reservation, actual);
          expect(s.alreadyFinished).toBe(false);
          expect(s.chargedNano + s.shortfallNano).toBe(actual);
          charged += s.chargedNano;
          if (p.then === 'twice') {
            const again = await l.settle(res.reservation.id, actual + 1n);
            expect(again).toEqual({ chargedNano: s.chargedNano, shortfallNano: 0n, alreadyFinished: true });
            expect(await l.release(res.reservation)).toEqual({ releasedNano: 0n, alreadyFinished: true });
          }
        }
        held -= p.amount;
      }),
    );
    expect(heldPeak).toBeLessThanOrEqual(FUNDED);
    for (const a of refusals) expect(a).toBeGreaterThanOrEqual(0n);
    const { bal, sum } = await expectJournalAddsUp(getDb(), walletId);
    expect(sum.chargedNano).toBe(charged);
    expect(bal.reservedNano).toBe(0n);
    expect(bal.availableNano).toBe(FUNDED - charged);
    // the calls were grouped: far fewer transactions than calls
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    expect(sizes.length).toBeLessThan(plan.length);
  });

  it('demand above the balance: concurrent reserves take exactly what there is, across lots and vendors', async () => {
    const { l, sizes } = batchLedger();
    const walletId = await fundedWallet(l);
    const results = await Promise.all(
      Array.from({ length: 150 }, (_, i) => l.reserve({ walletId, vendor: i % 2 ? 'a' : 'b', amountNano: 1_500n, callId: `d-${i}` })),
    );
    const ok = results.flatMap((x) => (x.ok ? [x.reservation] : []));
    // vendor a can use the a pack and the unrestricted lots, vendor b the unrestricted lots only; together
    // they ask for more than there is
    const bal = await l.balance(walletId);
    expect(bal.reservedNano).toBe(1_500n * BigInt(ok.length));
    expect(bal.availableNano).toBe(FUNDED - bal.reservedNano);
    for (const x of results) if (!x.ok) expect(x.availableNano).toBeLessThan(1_500n);
    // nothing a refused call could have used is left over for it
    expect(await l.usableNano(walletId, 'a')).toBeLessThan(1_500n);
    expect(await l.usableNano(walletId, 'b')).toBeLessThan(1_500n);
    expect(sizes.length).toBeLessThan(10);
    await Promise.all(ok.map((x) => l.release(x)));
    expect((await l.balance(walletId)).availableNano).toBe(FUNDED);
    await expectJournalAddsUp(getDb(), walletId);
  });

  it('one failing op in a batch fails alone: the others commit exactly', async () => {
    const { l, sizes } = batchLedger();
    const w = await l.createWallet({ credits: 100 }); // 100,000
    const held: Reservation[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await l.reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId: `h-${i}` });
      if (!r.ok) throw new Error('refused');
      held.push(r.reservation);
    }
    const notes = await chargeNotes(getDb());
    sizes.length = 0;
    // All submitted in the same tick: one batch.
    const calls = [
      l.settle(held[0]!, 4_000n, notes.noted(held[0]!.id)),
      l.settle({ ...held[1]!, id: 'res_nope' }, 1_000n),
      l.settle(held[1]!, 5_000n, notes.refused(held[1]!.id)),
      l.release(held[2]!),
      l.reserve({ walletId: w.id, vendor: 'b', amountNano: 50_000n, callId: 'new' }),
      l.reserve({ walletId: 'wal_missing', vendor: 'b', amountNano: 1n, callId: 'nowhere' }),
      l.settle(held[3]!, 12_000n), // 2,000 above its reservation: from available
    ];
    const out = await Promise.allSettled(calls);
    // One batch, which the refused rows rolled back; then each op alone, so only the failing one fails.
    expect(sizes).toEqual([calls.length, ...calls.map(() => 1)]);
    expect(out[0]).toMatchObject({ status: 'fulfilled', value: { chargedNano: 4_000n, shortfallNano: 0n, alreadyFinished: false } });
    expect(out[1]).toMatchObject({ status: 'rejected', reason: { status: 404 } });
    expect(out[2]).toMatchObject({ status: 'rejected', reason: { code: '22012' } });
    expect(out[3]).toMatchObject({ status: 'fulfilled', value: { releasedNano: 10_000n, alreadyFinished: false } });
    expect(out[4]).toMatchObject({ status: 'fulfilled', value: { ok: true } });
    expect(out[5]).toMatchObject({ status: 'rejected', reason: { status: 404 } });
    expect(out[6]).toMatchObject({ status: 'fulfilled', value: { chargedNano: 12_000n, shortfallNano: 0n, alreadyFinished: false } });
    // the successful charge's rows were written once (their first write was rolled back with the failed op's batch)
    expect(await notes.charged(held[0]!.id)).toEqual([4_000n]);
    // held[1] is still held and uncharged; the new reservation holds 50,000
    const bal = await l.balance(w.id);
    expect(bal.reservedNano).toBe(10_000n + 50_000n);
    expect(bal.availableNano).toBe(100_000n - 4_000n - 12_000n - 60_000n);
    const { sum } = await expectJournalAddsUp(getDb(), w.id);
    expect(sum.chargedNano).toBe(16_000n);
    // the failed settle can be done again, and is then charged once
    expect(await l.settle(held[1]!, 5_000n)).toEqual({ chargedNano: 5_000n, shortfallNano: 0n, alreadyFinished: false });
    expect(await l.settle(held[1]!, 5_000n)).toMatchObject({ alreadyFinished: true, chargedNano: 5_000n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('a settle whose charge rows fail in SQL (aborting the transaction) leaves that reservation held and uncharged; the rest of the batch commits', async () => {
    const { l, sizes } = batchLedger();
    const notes = await chargeNotes(getDb());
    const w = await l.createWallet({ credits: 50 });
    const rs: Reservation[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await l.reserve({ walletId: w.id, vendor: 'a', amountNano: 5_000n, callId: `s-${i}` });
      if (!r.ok) throw new Error('refused');
      rs.push(r.reservation);
    }
    sizes.length = 0;
    const out = await Promise.allSettled([
      l.settle(rs[0]!, 1_000n, notes.noted(rs[0]!.id)),
      l.settle(rs[1]!, 2_000n, notes.refused(rs[1]!.id)), // the transaction is aborted
      l.settle(rs[2]!, 3_000n, notes.noted(rs[2]!.id)),
    ]);
    expect(sizes[0]).toBe(3);
    expect(out[0]).toMatchObject({ status: 'fulfilled', value: { chargedNano: 1_000n } });
    expect(out[1]).toMatchObject({ status: 'rejected', reason: { code: '22012' } });
    expect(out[2]).toMatchObject({ status: 'fulfilled', value: { chargedNano: 3_000n } });
    expect([await notes.charged(rs[0]!.id), await notes.charged(rs[1]!.id), await notes.charged(rs[2]!.id)]).toEqual([
      [1_000n],
      [],
      [3_000n],
    ]);
    const row = await getDb().query<{ state: string; charged_nano: string | null }>(
      'SELECT state, charged_nano FROM reservations WHERE id = $1',
      [rs[1]!.id],
    );
    expect(row.rows[0]).toEqual({ state: 'held', charged_nano: null });
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 50_000n - 15_000n + 4_000n + 2_000n, reservedNano: 5_000n });
    expect((await journalSum(getDb(), w.id)).chargedNano).toBe(4_000n);
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('results are those of running the same calls one at a time, in order', async () => {
    const { l, sizes } = batchLedger();
    const wallets = [await fundedWallet(l), await fundedWallet(l)];
    // Same reservations held on both wallets before the run.
    const pre: Reservation[][] = [[], []];
    for (let k = 0; k < 2; k++) {
      const r = rng(7);
      for (let i = 0; i < 30; i++) {
        const res = await l.reserve({
          walletId: wallets[k]!,
          vendor: r.pick(['a', 'b', 'c']),
          amountNano: BigInt(r.int(1, 6_000)),
          callId: `pre-${i}`,
        });
        if (!res.ok) throw new Error('refused');
        pre[k]!.push(res.reservation);
      }
    }
    type Step =
      | { kind: 'reserve'; vendor: string; amount: bigint }
      | { kind: 'settle'; i: number; actual: bigint; rows?: 'noted' | 'refused' | undefined }
      | { kind: 'release'; i: number }
      | { kind: 'settle-forged'; i: number };
    const r = rng(99);
    const steps: Step[] = Array.from({ length: 150 }, (): Step => {
      const x = r.next();
      if (x < 0.45) return { kind: 'reserve', vendor: r.pick(['a', 'b', 'c', 'd']), amount: BigInt(r.int(0, 9_000)) };
      if (x < 0.75)
        return { kind: 'settle', i: r.int(0, 29), actual: BigInt(r.int(0, 9_000)), rows: r.pick([undefined, 'noted', 'noted', 'refused']) };
      if (x < 0.95) return { kind: 'release', i: r.int(0, 29) };
      return { kind: 'settle-forged', i: r.int(0, 29) };
    });
    const notes = await chargeNotes(getDb());
    const lotIndex = async (walletId: string) => new Map((await l.balance(walletId)).lots.map((x, n) => [x.id, n]));
    const idx = [await lotIndex(wallets[0]!), await lotIndex(wallets[1]!)];
    const call = (k: number, s: Step): Promise<unknown> => {
      switch (s.kind) {
        case 'reserve':
          return l
            .reserve({ walletId: wallets[k]!, vendor: s.vendor, amountNano: s.amount, callId: 'x' })
            .then((res) => (res.ok ? { ok: true, lots: res.reservation.lots.map((d) => [idx[k]!.get(d.lotId), d.amountNano]) } : res));
        case 'settle':
          return l.settle(pre[k]![s.i]!, s.actual, s.rows === undefined ? undefined : notes[s.rows](pre[k]![s.i]!.id));
        case 'release':
          return l.release(pre[k]![s.i]!);
        case 'settle-forged':
          return l.settle({ ...pre[k]![s.i]!, id: `res_forged_${s.i}` }, 1n);
      }
    };
    const norm = (o: PromiseSettledResult<unknown>) =>
      o.status === 'fulfilled'
        ? o.value
        : { error: (o.reason as { status?: number; message: string }).status ?? (o.reason as Error).message };
    // wallet 0: one call at a time
    const serial: PromiseSettledResult<unknown>[] = [];
    for (const s of steps) serial.push((await Promise.allSettled([call(0, s)]))[0]);
    // wallet 1: all at once, in the same order
    sizes.length = 0;
    const batched = await Promise.allSettled(steps.map((s) => call(1, s)));
    // Batched (a batch holding a failing op runs again op by op), with the results of one call at a time.
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    expect(batched.map(norm)).toEqual(serial.map(norm));
    const [b0, b1] = [await l.balance(wallets[0]!), await l.balance(wallets[1]!)];
    expect(b1.availableNano).toBe(b0.availableNano);
    expect(b1.reservedNano).toBe(b0.reservedNano);
    expect(b1.lots.map((x) => [x.availableNano, x.reservedNano])).toEqual(b0.lots.map((x) => [x.availableNano, x.reservedNano]));
    const [s0, s1] = [await expectJournalAddsUp(getDb(), wallets[0]!), await expectJournalAddsUp(getDb(), wallets[1]!)];
    expect(s1.sum.chargedNano).toBe(s0.sum.chargedNano);
    expect(s1.sum.releasedNano).toBe(s0.sum.releasedNano);
  });

  it('a bare reservation id, or a Reservation naming the wrong wallet, still settles the right wallet', async () => {
    const { l } = batchLedger();
    const w1 = await l.createWallet({ credits: 10 });
    const w2 = await l.createWallet({ credits: 10 });
    const a = await l.reserve({ walletId: w1.id, vendor: 'a', amountNano: 3_000n, callId: 'a' });
    const b = await l.reserve({ walletId: w2.id, vendor: 'a', amountNano: 4_000n, callId: 'b' });
    if (!a.ok || !b.ok) throw new Error('refused');
    const [sa, sb] = await Promise.all([l.settle(a.reservation.id, 1_000n), l.settle({ ...b.reservation, walletId: w1.id }, 2_000n)]);
    expect(sa).toEqual({ chargedNano: 1_000n, shortfallNano: 0n, alreadyFinished: false });
    expect(sb).toEqual({ chargedNano: 2_000n, shortfallNano: 0n, alreadyFinished: false });
    expect(await l.balance(w1.id)).toMatchObject({ availableNano: 9_000n, reservedNano: 0n });
    expect(await l.balance(w2.id)).toMatchObject({ availableNano: 8_000n, reservedNano: 0n });
    await expect(l.release('res_missing')).rejects.toMatchObject({ status: 404 });
    await expectJournalAddsUp(getDb(), w1.id);
    await expectJournalAddsUp(getDb(), w2.id);
  });

  it('the moves of many wallets share a transaction, and each wallet adds up; a queue per wallet takes one each', async () => {
    const run = async (queues: number) => {
      const sizes: number[] = [];
      const l = createLedger(getDb(), { clock, owner: `queues-${queues}`, walletQueues: () => queues, onBatch: (n) => sizes.push(n) });
      const wallets = await Promise.all(Array.from({ length: 20 }, () => l.createWallet({ credits: 10_000 }))); // 10,000,000 nano each
      sizes.length = 0;
      const charged = new Map<string, bigint>();
      await Promise.all(
        wallets.map(async (w, i) => {
          const res = await l.reserve({ walletId: w.id, vendor: 'b', amountNano: 4_000_000n, callId: `q${queues}-${i}` });
          if (!res.ok) throw new Error(`refused ${res.reason}`);
          const s = await l.settle(res.reservation, BigInt(1_000 * (i + 1)));
          charged.set(w.id, s.chargedNano);
        }),
      );
      for (const w of wallets) {
        const { bal, sum } = await expectJournalAddsUp(getDb(), w.id);
        expect(sum.chargedNano).toBe(charged.get(w.id));
        expect(bal.reservedNano).toBe(0n);
        expect(bal.availableNano).toBe(10_000_000n - charged.get(w.id)!);
      }
      return sizes;
    };
    const shared = await run(1);
    // 20 reserves and 20 settles of 20 wallets: the first reserve starts a transaction alone, the rest queue behind it.
    expect(Math.max(...shared)).toBeGreaterThan(1);
    expect(shared.length).toBeLessThan(40);
    if (kind === 'postgres') {
      // One queue per wallet (as before billing.yaml's ledger.queues): every move its own transaction.
      const apart = await run(1_000_000);
      expect(Math.max(...apart)).toBe(1);
      expect(apart.length).toBe(40);
    }
  });

  it('two ledgers sharing queues across overlapping wallets at once never deadlock for good, overspend or lose a move', async () => {
    const ledgers = [
      createLedger(getDb(), { clock, owner: 'o1', walletQueues: () => 1 }),
      createLedger(getDb(), { clock, owner: 'o2', walletQueues: () => 2 }),
    ];
    const wallets = await Promise.all(Array.from({ length: 6 }, () => fundedWallet(ledgers[0]!)));
    const charged = new Map<string, bigint>(wallets.map((w) => [w, 0n]));
    const r = rng(7);
    await Promise.all(
      Array.from({ length: 240 }, async (_, i) => {
        const walletId = r.pick(wallets);
        const res = await ledgers[i % 2]!.reserve({
          walletId,
          vendor: r.pick(['a', 'b', 'c']),
          amountNano: BigInt(r.int(1, 3_000)),
          callId: `ov-${i}`,
        });
        if (!res.ok) return;
        const s = await ledgers[(i + 1) % 2]!.settle(res.reservation, BigInt(r.int(0, 3_500)));
        charged.set(walletId!, charged.get(walletId!)! + s.chargedNano);
      }),
    );
    for (const w of wallets) {
      const { bal, sum } = await expectJournalAddsUp(getDb(), w);
      expect(sum.chargedNano).toBe(charged.get(w));
      expect(bal.reservedNano).toBe(0n);
      expect(bal.availableNano).toBe(FUNDED - charged.get(w)!);
    }
  });

  it('two ledgers (two batchers, as two processes) on one wallet at once never overspend', async () => {
    const ledgers = [createLedger(getDb(), { clock, owner: 'p1' }), createLedger(getDb(), { clock, owner: 'p2' })];
    const walletId = await fundedWallet(ledgers[0]!);
    let charged = 0n;
    let okCount = 0;
    await Promise.all(
      Array.from({ length: 160 }, async (_, i) => {
        const l = ledgers[i % 2]!;
        const res = await l.reserve({ walletId, vendor: i % 3 ? 'b' : 'c', amountNano: 2_000n, callId: `two-${i}` });
        if (!res.ok) return;
        okCount++;
        const s = await ledgers[(i + 1) % 2]!.settle(res.reservation, i % 5 === 0 ? 2_500n : 700n);
        charged += s.chargedNano;
      }),
    );
    expect(okCount).toBeGreaterThan(0);
    const { bal, sum } = await expectJournalAddsUp(getDb(), walletId);
    expect(sum.chargedNano).toBe(charged);
    expect(bal.reservedNano).toBe(0n);
    expect(bal.availableNano).toBe(FUNDED - charged);
  });
});
