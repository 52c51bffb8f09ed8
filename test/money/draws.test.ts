// Draws: many calls charged out of one held reservation (a process's budget lease), each once, in draw
// order, with the rest still held; past the hold, or once the hold is gone, from available balance as far as
// it goes. The journal adds up after every step.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { chargeNotes } from '../helpers/charge-rows.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

describeEachDatabase('draws on a held reservation', (getDb: () => Db) => {
  const clock = fixedClock('2026-05-01T00:00:00Z');
  const ledger = () => createLedger(getDb(), { clock, owner: 'lease-test' });

  async function leaseOf(l: ReturnType<typeof ledger>, walletId: string, amountNano: bigint, vendor = 'b') {
    const r = await l.reserve({ walletId, vendor, amountNano, callId: 'lease:test' });
    if (!r.ok) throw new Error(`lease refused: ${r.reason}`);
    return r.reservation;
  }

  it('charges each draw out of the hold and leaves the rest held; a release gives back only the rest', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 10 }); // 10,000 nano
    const lease = await leaseOf(l, w.id, 4000n);
    expect((await l.draw(lease, 300n, 'call-1')).chargedNano).toBe(300n);
    expect((await l.draw(lease, 200n, 'call-2')).chargedNano).toBe(200n);
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 6000n, reservedNano: 3500n });
    const row = await getDb().query<{ amount_nano: string; charged_nano: string; state: string }>(
      'SELECT amount_nano, charged_nano, state FROM reservations WHERE id = $1',
      [lease.id],
    );
    expect(row.rows[0]).toMatchObject({ amount_nano: '3500', charged_nano: '500', state: 'held' });
    await expectJournalAddsUp(getDb(), w.id);

    expect((await l.release(lease)).releasedNano).toBe(3500n);
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 9500n, reservedNano: 0n });
    const after = await getDb().query<{ charged_nano: string; state: string }>(
      'SELECT charged_nano, state FROM reservations WHERE id = $1',
      [lease.id],
    );
    expect(after.rows[0]).toMatchObject({ charged_nano: '500', state: 'released' });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('a draw repeated with the same id charges nothing and does not write its charge rows again', async () => {
    const l = ledger();
    const notes = await chargeNotes(getDb());
    const w = await l.createWallet({ credits: 10 });
    const lease = await leaseOf(l, w.id, 4000n);
    await l.draw(lease, 700n, 'call-x', notes.noted(`${lease.id}-x`));
    const again = await l.draw(lease, 700n, 'call-x', notes.noted(`${lease.id}-x`));
    expect(again).toMatchObject({ chargedNano: 0n, alreadyFinished: true });
    expect(await notes.charged(`${lease.id}-x`)).toEqual([700n]);
    expect((await l.balance(w.id)).reservedNano).toBe(3300n);
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('past the hold, the excess comes from available balance as far as it goes; after a release, all of it', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 1 }); // 1,000 nano
    const lease = await leaseOf(l, w.id, 400n);
    expect(await l.draw(lease, 500n, 'big')).toMatchObject({ chargedNano: 500n, shortfallNano: 0n });
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 500n, reservedNano: 0n });
    await l.release(lease);
    expect(await l.draw(lease, 800n, 'late')).toMatchObject({ chargedNano: 500n, shortfallNano: 300n });
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 0n, reservedNano: 0n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('draws restricted lots first, as a settle does', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 10 });
    await l.topUp(w.id, { credits: 2, vendors: ['b'] }); // 2,000 nano for vendor B only
    const lease = await leaseOf(l, w.id, 5000n);
    await l.draw(lease, 2500n, 'spend');
    const bal = await l.balance(w.id);
    const restricted = bal.lots.find((x) => x.vendors !== null)!;
    expect(restricted.availableNano + restricted.reservedNano).toBe(0n); // spent first
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('concurrent draws each charge once and add up', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 100 });
    const lease = await leaseOf(l, w.id, 60_000n);
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => l.draw(lease, BigInt(100 + i), `c-${i}`)));
    const total = results.reduce((a, r) => a + r.chargedNano, 0n);
    const expected = Array.from({ length: 60 }, (_, i) => BigInt(100 + i)).reduce((a, b) => a + b, 0n);
    expect(total).toBe(expected);
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 40_000n, reservedNano: 60_000n - expected });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('writes up to 256 draws queued together in one transaction, past the 64 ops of a reserve or settle batch (PostgreSQL)', async () => {
    const sizes: number[] = [];
    const l = createLedger(getDb(), { clock, owner: 'lease-test', onBatch: (n) => sizes.push(n) });
    const w = await l.createWallet({ credits: 1000 });
    const lease = await leaseOf(l, w.id, 500_000n);
    sizes.length = 0;
    await Promise.all(Array.from({ length: 300 }, (_, i) => l.draw(lease, 100n, `q-${i}`)));
    if (getDb().kind === 'postgres') expect(sizes).toEqual([256, 44]);
    else expect(sizes.reduce((a, b) => a + b, 0)).toBe(300); // PGlite: one queue, batches start as ops arrive
    expect(await l.balance(w.id)).toMatchObject({ reservedNano: 500_000n - 300n * 100n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('draws arriving within flush_ms of the last draws batch wait and share the next one; a reserve never waits for them', async () => {
    const sizes: number[] = [];
    const l = createLedger(getDb(), { clock, owner: 'lease-test', drawFlushMs: () => 300, onBatch: (n) => sizes.push(n) });
    const w = await l.createWallet({ credits: 1000 });
    const lease = await leaseOf(l, w.id, 500_000n);
    sizes.length = 0;
    const first = l.draw(lease, 100n, 'first'); // nothing drawn lately: written at once
    await first;
    const started = Date.now();
    const later: Promise<unknown>[] = [];
    for (let i = 0; i < 9; i++) {
      later.push(l.draw(lease, 100n, `later-${i}`));
      await new Promise((r) => setTimeout(r, 5));
    }
    // A reservation asked for meanwhile is not held back by the draws' wait.
    const reserved = await l.reserve({ walletId: w.id, vendor: 'b', amountNano: 1_000n, callId: 'exact-call' });
    expect(reserved.ok).toBe(true);
    expect(Date.now() - started).toBeLessThan(250);
    await Promise.all(later);
    // PostgreSQL: the reserve is its wallet's own batch, the draws wait for theirs. PGlite (one queue): the
    // reserve starts a batch at once, which takes the waiting draws along.
    expect(sizes).toEqual(getDb().kind === 'postgres' ? [1, 1, 9] : [1, 10]);
    expect(await l.balance(w.id)).toMatchObject({ reservedNano: 500_000n - 10n * 100n + 1_000n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it("a draw's row says when the call drew, not when its batch was written", async () => {
    const moving = fixedClock('2026-05-02T00:00:00Z');
    const l = createLedger(getDb(), { clock: moving, owner: 'lease-test', drawFlushMs: () => 200 });
    const w = await l.createWallet({ credits: 1000 });
    const lease = await leaseOf(l, w.id, 500_000n);
    await l.draw(lease, 100n, 'at-first'); // written at once: the next draws wait for the flush
    moving.set('2026-05-02T00:00:10Z');
    const waiting = [l.draw(lease, 100n, 'at-second')];
    moving.set('2026-05-02T00:00:20Z');
    waiting.push(l.draw(lease, 100n, 'at-third'));
    moving.set('2026-05-02T00:01:00Z'); // the batch that writes them runs at this time
    await Promise.all(waiting);
    const rows = await getDb().query<{ draw_id: string; at: Date }>(
      `SELECT draw_id, at FROM reservation_draws WHERE reservation_id = $1 ORDER BY at`,
      [lease.id],
    );
    expect(rows.rows.map((r) => [r.draw_id, new Date(r.at).toISOString()])).toEqual([
      ['at-first', '2026-05-02T00:00:00.000Z'],
      ['at-second', '2026-05-02T00:00:10.000Z'],
      ['at-third', '2026-05-02T00:00:20.000Z'],
    ]);
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('a trim gives back part of what a lease holds and leaves it held with the rest; draws still charge from the rest', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 10 }); // 10,000 nano
    await l.topUp(w.id, { credits: 2, vendors: ['b'] }); // 2,000 nano for vendor B only, drawn first
    const lease = await leaseOf(l, w.id, 6000n); // holds the restricted 2,000 and 4,000 unrestricted
    expect(await l.draw(lease, 500n, 'before')).toMatchObject({ chargedNano: 500n });
    expect(await l.trim(lease, 3000n)).toEqual({ releasedNano: 3000n }); // from the unrestricted lot, last drawn
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 9000n, reservedNano: 2500n });
    const restricted = (await l.balance(w.id)).lots.find((x) => x.vendors !== null)!;
    expect(restricted.reservedNano).toBe(1500n); // the restricted part stays held for the calls to come
    await expectJournalAddsUp(getDb(), w.id);
    // More than it holds: all of it, and it stays held (at 0) for the draws still to be written.
    expect(await l.trim(lease, 1_000_000n)).toEqual({ releasedNano: 2500n });
    expect(await l.draw(lease, 700n, 'after')).toMatchObject({ chargedNano: 700n, shortfallNano: 0n }); // from available
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 12_000n - 500n - 700n, reservedNano: 0n });
    expect((await l.release(lease)).releasedNano).toBe(0n);
    expect(await l.trim(lease, 100n)).toEqual({ releasedNano: 0n }); // released: nothing to give back
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('the sweeper releases what an expired lease still holds and keeps what it charged', async () => {
    const l = ledger();
    const w = await l.createWallet({ credits: 10 });
    const r = await l.reserve({
      walletId: w.id,
      vendor: 'b',
      amountNano: 3000n,
      callId: 'lease:dead',
      expiresAt: new Date('2026-05-01T00:00:01Z'),
    });
    if (!r.ok) throw new Error('refused');
    await l.draw(r.reservation, 1000n, 'before-death');
    expect(await l.sweepExpired(new Date('2026-05-01T00:01:00Z'))).toBe(1);
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 9000n, reservedNano: 0n });
    await expectJournalAddsUp(getDb(), w.id);
  });
});
