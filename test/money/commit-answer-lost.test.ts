// A batch whose COMMIT was sent with its write, and whose answer the connection lost, may have committed. Its draws
// then run alone (a charge row may have been what failed), and must be looked for, not drawn a second time.
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { chargeNotes } from '../helpers/charge-rows.ts';
import { postgresThroughProxy } from '../helpers/counting-proxy.ts';
import { postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { usageRecordsOf } from '../helpers/usage-drafts.ts';

describe.runIf(postgresAvailability.ok || REQUIRE_POSTGRES)('the answer to a batch COMMIT lost on the way', () => {
  const through = postgresThroughProxy({ max: 2 });

  for (const owed of [true, false]) {
    it(`a first-try draw ${owed ? 'owed on its lease (its usage record alone)' : "on the Book's path"} is charged once`, async () => {
      const { db, pgs, proxy } = through;
      const clock = fixedClock('2026-05-01T00:00:00Z');
      const ledger = createLedger(db, { clock, owner: `lost-commit-${owed}` });
      const notes = await chargeNotes(pgs.db);
      const w = await ledger.createWallet({ credits: 10 });
      const records = await usageRecordsOf(pgs.db, w.id, clock.now());
      const lease = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 4_000n, callId: 'lease:lost-commit' });
      if (!lease.ok) throw new Error('refused');
      const tag = `lost-${owed}`;
      const rows = owed ? records.rows(tag) : notes.recorded(tag);
      const written = async () => (owed ? await records.count(tag) : (await notes.charged(tag)).length);
      proxy.loseNextCommitAnswer();
      await ledger.draw(lease.reservation, 300n, `${tag}-draw`, rows, { firstTry: () => true }).catch(() => undefined);
      expect(await written(), 'the COMMIT whose answer was lost took effect').toBe(1);
      // Whatever the first attempt answered, the charge writer's next try is not a first one.
      await ledger.draw(lease.reservation, 300n, `${tag}-draw`, rows, { firstTry: () => false });
      expect(await written()).toBe(1);
      await ledger.release(lease.reservation);
      const { sum } = await expectJournalAddsUp(db, w.id);
      expect(sum.chargedNano).toBe(300n);
    });
  }
});
