// A draw's first try does not look for an earlier write of itself, which only a retry or a replay can have made. A
// process frozen past its lease's life can be taken for dead, and another process can replay its spooled charge.
// When the frozen process wakes, its first try is then older than its batch, so it looks too, and the call is
// charged once.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { chargeNotes } from '../helpers/charge-rows.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

async function leaseWithReplayedDraw(db: Db, tag: string) {
  const clock = fixedClock('2026-05-01T00:00:00Z');
  const frozen = createLedger(db, { clock, owner: `frozen-${tag}` });
  const replayer = createLedger(db, { clock, owner: `replayer-${tag}` });
  const notes = await chargeNotes(db);
  const w = await frozen.createWallet({ credits: 10 });
  const r = await frozen.reserve({ walletId: w.id, vendor: 'b', amountNano: 4_000n, callId: `lease:frozen-${tag}` });
  if (!r.ok) throw new Error(`lease refused: ${r.reason}`);
  // The other process replays the frozen one's kept charge: a write that looks, as every replay's does.
  await replayer.draw(r.reservation.id, 700n, `call-${tag}`, notes.recorded(tag));
  return { clock, frozen, notes, lease: r.reservation, walletId: w.id };
}

describeEachDatabase('a first try held up past a replay of it', (getDb) => {
  it('looks for its earlier write when it runs long after it was made, and charges nothing twice', async () => {
    const t = await leaseWithReplayedDraw(getDb(), 'held-up');
    const firstTry = t.frozen.draw(t.lease, 700n, 'call-held-up', t.notes.recorded('held-up'), { firstTry: true });
    t.clock.advance(60_000); // frozen between the try and its batch
    expect(await firstTry).toMatchObject({ alreadyFinished: true });
    expect(await t.notes.charged('held-up')).toEqual([700n]);
    expect((await t.frozen.balance(t.walletId)).reservedNano).toBe(3_300n);
    await expectJournalAddsUp(getDb(), t.walletId);
  });
});
