// A burst of calls on a wallet and vendor with no lease yet (the first calls after a start, or after the
// pair's leases went back idle): the calls wait for the lease being granted, which is sized to cover them,
// instead of each reserving on its own; money stays exact, and a wallet too small to lease still serves them.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { leaseSettings } from '../helpers/lease-settings.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const settings = leaseSettings({ minSliceNano: 20_000n });

describeEachDatabase('a burst on a pair with no lease', (getDb: () => Db) => {
  it('is admitted on the lease being granted, each call charged once', async () => {
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'lease-burst-test' });
    const w = await ledger.createWallet({ credits: 100_000 }); // 100,000,000 nano: a quarter covers the burst
    const book = budgetLeases(ledger, () => settings);
    const calls = 200;
    let charged = 0n;
    try {
      const holds = await Promise.all(Array.from({ length: calls }, () => book.holdOrWait(w.id, 'b', 50_000n)));
      expect(holds.filter((h) => h === null)).toHaveLength(0);
      expect(book.stats()).toMatchObject({ admitted: calls, missed: 0 });
      for (const [i, h] of holds.entries()) charged += await book.charge(h!, 40_000n, `burst-${i}`, noRows()).committed;
      await book.flushed();
    } finally {
      await book.close(5_000);
    }
    expect(charged).toBe(BigInt(calls) * 40_000n);
    expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 100_000_000n - charged, reservedNano: 0n });
    await expectJournalAddsUp(getDb(), w.id);
  });

  it('sends the burst to the exact path when the wallet is too small to lease, without waiting again', async () => {
    const ledger = createLedger(getDb(), { clock: systemClock, owner: 'lease-burst-test' });
    const w = await ledger.createWallet({ credits: 100 }); // 100,000 nano: a quarter holds fewer than four calls
    const book = budgetLeases(ledger, () => settings);
    try {
      const holds = await Promise.all(Array.from({ length: 20 }, () => book.holdOrWait(w.id, 'b', 50_000n)));
      expect(holds.every((h) => h === null)).toBe(true);
      expect(book.stats()).toMatchObject({ admitted: 0, missed: 20, leases: 0 });
      // The refusal cools the pair down: the next call is not made to wait for another grant.
      expect(book.holdOrWait(w.id, 'b', 50_000n)).toBeNull();
    } finally {
      await book.close(5_000);
    }
    expect(await ledger.balance(w.id)).toMatchObject({ availableNano: 100_000n, reservedNano: 0n });
  });
});
