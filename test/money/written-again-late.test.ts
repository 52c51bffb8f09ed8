// A charge written again a day or more away from its first write: a retry whose first COMMIT's answer was lost and
// whose waits ran long, or a spool replayed by a process started days later, or on a host whose clock runs a day
// apart. Its usage record carries the call's end, decided once on the first writer's clock, so the look for it is
// bounded around that instant, not around the writing process's now (an attack charged 40 of 40 replayed charges
// twice at +48 h, and 30 of 30 with the first writer's clock 25 h ahead).
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp, journalSum } from '../helpers/ledger.ts';
import { usageRecordsOf } from '../helpers/usage-drafts.ts';

const at = new Date('2026-05-01T03:00:00Z');
const HOUR = 3_600_000;

/** A draw of 600 nano on a lease, written again `hours` later on the ledger's clock; the lease ends first or after. */
async function drawnTwice(db: Db, hours: number, leaseEndsFirst: boolean) {
  const clock = fixedClock(at.toISOString());
  const ledger = createLedger(db, { clock, owner: `late-${hours}-${leaseEndsFirst}` });
  const w = await ledger.createWallet({ credits: 1_000 });
  const records = await usageRecordsOf(db, w.id, at);
  const lease = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId: `lease:late-${w.id}` });
  if (!lease.ok) throw new Error(`lease refused: ${lease.reason}`);
  const first = await ledger.draw(lease.reservation, 600n, `draw-${w.id}`, records.rows('req'), { firstTry: () => true });
  if (leaseEndsFirst) await ledger.release(lease.reservation);
  clock.advance(hours * HOUR);
  const again = await ledger.draw(lease.reservation, 600n, `draw-${w.id}`, records.rows('req'), { firstTry: () => false });
  if (!leaseEndsFirst) await ledger.release(lease.reservation);
  return { first, again, records: await records.count('req'), walletId: w.id };
}

describeEachDatabase('a charge written again a day or more away', (getDb: () => Db) => {
  for (const hours of [25, -25, 72])
    for (const leaseEndsFirst of [false, true])
      it(`moves nothing again at ${hours > 0 ? '+' : ''}${hours} h, its lease ${leaseEndsFirst ? 'ended' : 'still held'}`, async () => {
        const t = await drawnTwice(getDb(), hours, leaseEndsFirst);
        expect(t.first.chargedNano).toBe(600n);
        expect(t.again.chargedNano).toBe(0n);
        expect(t.records).toBe(1);
        expect((await journalSum(getDb(), t.walletId)).chargedNano).toBe(600n);
        await expectJournalAddsUp(getDb(), t.walletId);
      });
});
