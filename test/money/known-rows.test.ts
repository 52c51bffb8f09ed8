// A batch of charges on rows this process last committed is decided on them, its lock and check sent with its write
// (engine/money/known-rows.ts, batch-sql.ts `expectRows`). Another writer having changed them first costs the batch
// a second run on fresh rows, never money: what each draw charges is what the usual path would charge.
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import type { Pending } from '../../engine/money/batch-queues.ts';
import { KnownRows } from '../../engine/money/known-rows.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { Book, type LotState, type ResState } from '../../engine/money/policy.ts';
import type { Reservation } from '../../engine/money/types.ts';
import { postgresThroughProxy } from '../helpers/counting-proxy.ts';
import { describeEachDatabase, postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const clock = fixedClock('2026-05-01T00:00:00Z');

/** A ledger counting its batch transactions (a batch found stale runs twice). */
function countingLedger(db: Db, owner: string) {
  const runs = { n: 0 };
  const ledger = createLedger(db, { clock, owner, onBatch: () => runs.n++ });
  return { ledger, runs };
}

async function leaseOf(ledger: ReturnType<typeof createLedger>, walletId: string, amountNano: bigint): Promise<Reservation> {
  const r = await ledger.reserve({ walletId, vendor: 'b', amountNano, callId: 'lease:known-rows' });
  if (!r.ok) throw new Error(`lease refused: ${r.reason}`);
  return r.reservation;
}

describeEachDatabase('charges decided on the rows this process wrote', (getDb) => {
  it('draws on a lease run once each and charge as the usual path does', async () => {
    const { ledger, runs } = countingLedger(getDb(), 'known-a');
    const w = await ledger.createWallet({ credits: 10 });
    const lease = await leaseOf(ledger, w.id, 4_000n);
    runs.n = 0;
    for (let i = 0; i < 5; i++)
      expect((await ledger.draw(lease, 300n, `once-${i}`, undefined, { firstTry: () => true })).chargedNano).toBe(300n);
    expect(runs.n).toBe(5);
    expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 6_000n, reservedNano: 2_500n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('a lot another writer changed is found: the draw runs again on fresh rows and charges what they allow', async () => {
    const { ledger, runs } = countingLedger(getDb(), 'known-b');
    const other = createLedger(getDb(), { clock, owner: 'known-other' });
    const w = await ledger.createWallet({ credits: 10 });
    const theirs = await leaseOf(other, w.id, 6_000n);
    const lease = await leaseOf(ledger, w.id, 4_000n); // this process remembers the lot with nothing available
    await ledger.draw(lease, 100n, 'before-theirs', undefined, { firstTry: () => true });
    await other.release(theirs); // 6,000 available again, which this process has not seen
    runs.n = 0;
    // Past its hold of 3,900 the draw takes the rest from available balance: decided on memory it would find none
    // and leave 1,100 uncharged; the check sends it round again on the rows as they are.
    const past = await ledger.draw(lease, 5_000n, 'past-hold', undefined, { firstTry: () => true });
    expect(past).toMatchObject({ chargedNano: 5_000n, shortfallNano: 0n });
    expect(runs.n).toBe(2); // decided on memory, found stale, decided again on the locked rows
    expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 4_900n, reservedNano: 0n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('a lot topped up meanwhile is found too, and a hold moved by hand fails its op as before', async () => {
    const { ledger, runs } = countingLedger(getDb(), 'known-c');
    const w = await ledger.createWallet({ credits: 10 });
    const lease = await leaseOf(ledger, w.id, 2_000n);
    await ledger.draw(lease, 100n, 'before-top-up', undefined, { firstTry: () => true });
    await ledger.topUp(w.id, { credits: 1 });
    runs.n = 0;
    expect((await ledger.draw(lease, 100n, 'after-top-up', undefined, { firstTry: () => true })).chargedNano).toBe(100n);
    expect(runs.n).toBe(2);
    await expectJournalAddsUp(getDb(), w.id);

    const lease2 = await leaseOf(ledger, w.id, 500n);
    await ledger.draw(lease2, 100n, 'seed', undefined, { firstTry: () => true });
    const dead = await ledger.topUp(w.id, { credits: 1 });
    await getDb().query('UPDATE credit_lots SET available_nano = 0 WHERE id = $1', [dead.id]);
    await getDb().query('UPDATE reservation_lots SET lot_id = $2 WHERE reservation_id = $1', [lease2.id, dead.id]);
    await expect(ledger.draw(lease2, 100n, 'on-broken', undefined, { firstTry: () => true })).rejects.toThrow(/not live/);
  });
});

describeEachDatabase('a lot edited by hand where no money moved', (getDb) => {
  for (const edit of ['expiry', 'vendors'] as const) {
    it(`its ${edit} is read again: a settle past its hold takes nothing more from it`, async () => {
      const { ledger, runs } = countingLedger(getDb(), `known-edit-${edit}`);
      const w = await ledger.createWallet({ credits: 0 });
      const first =
        edit === 'expiry'
          ? await ledger.topUp(w.id, { nano: 10_000n, expiresAt: new Date('2026-06-01T00:00:00Z') })
          : await ledger.topUp(w.id, { nano: 10_000n, vendors: ['b'] });
      await ledger.topUp(w.id, { nano: 10_000n });
      const r = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 1_000n, callId: `own-${edit}` });
      if (!r.ok) throw new Error(`refused: ${r.reason}`);
      const sql =
        edit === 'expiry'
          ? `UPDATE credit_lots SET expires_at = '2026-04-30T00:00:00Z' WHERE id = $1` // before the clock: expired
          : `UPDATE credit_lots SET vendors = '{a}' WHERE id = $1`; // no longer serves vendor b
      await getDb().query(sql, [first.id]);
      runs.n = 0;
      expect((await ledger.settle(r.reservation, 3_000n)).chargedNano).toBe(3_000n);
      expect(runs.n).toBe(2);
      const lots = (await ledger.balance(w.id)).lots;
      // Its hold is charged as held; the 2,000 past it come from the other lot, as the usual path decides.
      expect(lots.find((l) => l.id === first.id)?.availableNano).toBe(9_000n);
      await expectJournalAddsUp(getDb(), w.id);
    });
  }
});

describe.runIf(postgresAvailability.ok || REQUIRE_POSTGRES)('charges decided on remembered rows, in flights', () => {
  const through = postgresThroughProxy();

  it('a draw on remembered rows is one flight; found stale, three; then its wallet reads first, two', async () => {
    const { db, pgs, proxy } = through;
    const ledger = createLedger(db, { clock, owner: 'known-flights' });
    const other = createLedger(pgs.db, { clock, owner: 'known-flights-other' });
    const w = await ledger.createWallet({ credits: 10 });
    const lease = await leaseOf(ledger, w.id, 4_000n);
    const drawFlights = async (id: string) => {
      proxy.flights = 0;
      await ledger.draw(lease, 100n, id, undefined, { firstTry: () => true });
      return proxy.flights;
    };
    expect(await drawFlights('a')).toBe(1); // BEGIN, the lock and check, the write and COMMIT, together
    expect(await drawFlights('b')).toBe(1);
    await leaseOf(other, w.id, 1_000n);
    expect(await drawFlights('c')).toBe(3); // the stale run, then the usual two
    expect(await drawFlights('d')).toBe(2); // another writer was first: this wallet's batches read their rows a while
    expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 5_000n, reservedNano: 4_600n });
  });
});

describe('a remembered wallet found changed while another batch of this process runs on it', () => {
  // A wallet's draws and its lease's moves run side by side, and the draws' check can fail on the other batch's
  // commit before that commit is remembered. Taking it for another writer's sent every batch of the wallet round
  // the two-flight path for SHARED_MS, under load most of the time.
  const lot: LotState = { id: 'lot-1', walletId: 'w-1', seq: 1n, vendors: null, avail: 6_000n, reserved: 4_000n };
  const lease: ResState = {
    id: 'res-1',
    walletId: 'w-1',
    keyId: null,
    vendor: 'b',
    amount: 4_000n,
    state: 'held',
    charged: 0n,
    expiresAt: new Date('2026-05-01T01:00:00Z'),
    held: new Map([['lot-1', 4_000n]]),
  };
  const drawOn = (id: string): Pending => ({
    op: { kind: 'draw', id: lease.id, drawId: id, walletId: 'w-1', actualNano: 100n, firstTry: () => true },
    resolve: () => {},
    reject: () => {},
  });
  const rememberedRows = () => {
    const known = new KnownRows();
    known.remember(new Book([{ ...lot }], new Map([[lease.id, { ...lease, held: new Map(lease.held) }]])), ['w-1']);
    return known;
  };

  for (const otherRunning of [false, true]) {
    it(
      otherRunning ? 'is its own: the next batch after it is remembered decides on memory' : 'from another writer: the wallet reads first',
      () => {
        const known = rememberedRows();
        const draws = [drawOn('d-1')];
        const leaveDraws = known.enter(draws);
        const leaveOther = otherRunning ? known.enter([drawOn('lease-move')]) : () => {};
        const decided = known.bookFor(draws, clock.now());
        if (!decided) throw new Error('not decided on memory');
        known.stale(decided.expected);
        leaveDraws();
        expect(known.bookFor([drawOn('d-2')], clock.now())).toBeNull(); // the rows are read again either way
        known.remember(new Book([{ ...lot, reserved: 3_000n }], new Map([[lease.id, { ...lease, held: new Map(lease.held) }]])), ['w-1']);
        leaveOther();
        expect(known.bookFor([drawOn('d-3')], clock.now()) !== null).toBe(otherRunning);
      },
    );
  }
});
