// A call whose vendor usage comes back above its hold, on a lease that other calls in flight share (found by
// the attack helper: 14 of 16 rounds left two streamed calls charged 0 and the wallet 7,500 credits richer than
// exact mode leaves it). Its charge must not take what the lease holds for the other calls, and past its lease
// it reaches the wallet's money as exact mode does, including what this process's other leases hold unused.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import type { LeaseHold, LeaseSettings } from '../../engine/money/leases.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const UNIT = 1_000_000n;
const settings = (): LeaseSettings => ({
  sliceSeconds: 10,
  minSliceNano: 200n * UNIT,
  maxShare: 0.5,
  ttlMs: 60_000,
  idleReturnMs: 30_000,
  maxPendingDraws: 1_024,
});

describeEachDatabase('a call charged past its hold on a shared lease', (getDb: () => Db) => {
  it('leaves the other calls on the lease their holds, and reaches the money the process holds in other leases', async () => {
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'process-here' });
    const book = budgetLeases(ledger, settings);
    const w = await ledger.createWallet();
    await ledger.topUp(w.id, { nano: 1_000n * UNIT });
    const admit = async (amount: bigint): Promise<LeaseHold> => {
      const h = await book.holdOrWait(w.id, 'b', amount * UNIT);
      expect(h, `a call of ${amount} units was not admitted on a lease`).not.toBeNull();
      return h!;
    };

    // The first lease (200 units) admits three small calls and one of 100 units.
    const small = [await admit(10n), await admit(10n), await admit(10n)];
    const big = await admit(100n);
    expect(small.every((h) => h.lease === big.lease)).toBe(true);
    // One more call does not fit what is left of it (70): a second lease (400 units) takes it.
    const other = await admit(80n);
    expect(other.lease).not.toBe(big.lease);
    expect((await ledger.balance(w.id)).availableNano).toBe(400n * UNIT);

    // The big call's usage comes back at 1,000 units. Exact mode would charge it its own hold and what is
    // free of the first lease (170), plus the wallet's available balance (400) and what the second lease
    // holds beyond its call (320): 890.
    const charged = await book.charge(big, 1_000n * UNIT, 'big-call', noRows()).committed;
    expect(charged).toBe(890n * UNIT);
    // The small calls and the second lease's call are charged in full, from what was held for them.
    for (const [i, h] of small.entries()) expect(await book.charge(h, 10n * UNIT, `small-${i}`, noRows()).committed).toBe(10n * UNIT);
    expect(await book.charge(other, 80n * UNIT, 'other-call', noRows()).committed).toBe(80n * UNIT);

    await book.flushed();
    await book.returnWallet(w.id);
    const after = await ledger.balance(w.id);
    expect(after.reservedNano).toBe(0n);
    expect(after.availableNano).toBe(0n); // 1,000 = 890 + 3 × 10 + 80
    await expectJournalAddsUp(getDb(), w.id);
    await book.close(1_000);
  });

  it("on a wallet whose balance covers the excess, charges it all and leaves the process's other leases open", async () => {
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'process-rich' });
    const book = budgetLeases(ledger, settings);
    const w = await ledger.createWallet();
    await ledger.topUp(w.id, { nano: 10_000n * UNIT });
    const small = (await book.holdOrWait(w.id, 'b', 10n * UNIT))!;
    const big = (await book.holdOrWait(w.id, 'b', 100n * UNIT))!;
    const other = (await book.holdOrWait(w.id, 'b', 180n * UNIT))!;
    expect(big.lease).toBe(small.lease);
    expect(other.lease).not.toBe(big.lease);

    expect(await book.charge(big, 1_000n * UNIT, 'big-call-rich', noRows()).committed).toBe(1_000n * UNIT);
    expect(await book.charge(small, 10n * UNIT, 'small-call-rich', noRows()).committed).toBe(10n * UNIT);
    // The second lease still admits calls: nothing was asked back from it.
    const next = await book.holdOrWait(w.id, 'b', 10n * UNIT);
    expect(next?.lease).toBe(other.lease);
    expect(await book.charge(next!, 10n * UNIT, 'next-call-rich', noRows()).committed).toBe(10n * UNIT);
    expect(await book.charge(other, 180n * UNIT, 'other-call-rich', noRows()).committed).toBe(180n * UNIT);

    await book.flushed();
    await book.returnWallet(w.id);
    expect(await ledger.balance(w.id)).toMatchObject({ reservedNano: 0n, availableNano: (10_000n - 1_200n) * UNIT });
    await expectJournalAddsUp(getDb(), w.id);
    await book.close(1_000);
  });
});
