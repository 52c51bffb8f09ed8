// A batch whose COMMIT was sent with its write, and whose answer the connection lost, may have committed. Its draws
// then run alone (a charge row may have been what failed), and must be looked for, not drawn a second time.
import { describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { chargeNotes } from '../helpers/charge-rows.ts';
import { postgresThroughProxy } from '../helpers/counting-proxy.ts';
import { postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

describe.runIf(postgresAvailability.ok || REQUIRE_POSTGRES)('the answer to a batch COMMIT lost on the way', () => {
  const through = postgresThroughProxy({ max: 2 });

  for (const remembered of [true, false]) {
    it(`a first-try draw ${remembered ? 'on remembered rows' : 'read first'} is charged once`, async () => {
      const { db, pgs, proxy } = through;
      const clock = fixedClock('2026-05-01T00:00:00Z');
      const ledger = createLedger(db, { clock, owner: `lost-commit-${remembered}` });
      const notes = await chargeNotes(pgs.db);
      const w = await ledger.createWallet({ credits: 10 });
      const lease = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 4_000n, callId: 'lease:lost-commit' });
      if (!lease.ok) throw new Error('refused');
      // A ledger that remembers nothing of the wallet reads its rows first.
      const drawer = remembered ? ledger : createLedger(db, { clock, owner: 'lost-commit-fresh' });
      const tag = `lost-${remembered}`;
      proxy.loseNextCommitAnswer();
      await drawer.draw(lease.reservation, 300n, `${tag}-draw`, notes.recorded(tag), { firstTry: () => true }).catch(() => undefined);
      // Whatever the first attempt answered, the charge writer's next try is not a first one.
      await drawer.draw(lease.reservation, 300n, `${tag}-draw`, notes.recorded(tag), { firstTry: () => false });
      expect(await notes.charged(tag)).toEqual([300n]);
      const charged = await pgs.db.query<{ c: string }>('SELECT charged_nano::text AS c FROM reservations WHERE id = $1', [
        lease.reservation.id,
      ]);
      expect(charged.rows[0]!.c).toBe('300');
      await expectJournalAddsUp(db, w.id);
    });
  }
});
