// A draw's first try does not look for an earlier write of itself, which only a retry or a replay can have made. Once
// its intent is kept in the spool, another process may replay it (a process frozen past its lease's life is taken
// for dead), so from then on even the first try looks, and the call is charged once.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { chargeNotes } from '../helpers/charge-rows.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

describeEachDatabase('a first try whose intent was kept', (getDb: () => Db) => {
  it('looks for its earlier write, which a replay made meanwhile, and charges nothing twice', async () => {
    const clock = fixedClock('2026-05-01T00:00:00Z');
    const frozen = createLedger(getDb(), { clock, owner: 'frozen' });
    const replayer = createLedger(getDb(), { clock, owner: 'replayer' });
    const notes = await chargeNotes(getDb());
    const w = await frozen.createWallet({ credits: 10 });
    const r = await frozen.reserve({ walletId: w.id, vendor: 'b', amountNano: 4_000n, callId: 'lease:frozen' });
    if (!r.ok) throw new Error(`lease refused: ${r.reason}`);
    await frozen.draw(r.reservation, 100n, 'before', notes.recorded('kept'), { firstTry: () => true }); // rows remembered

    // Its commit wait ran out, its intent went to the spool, and before its batch ran another process replayed it.
    let kept = false;
    const attempt = { firstTry: () => !kept };
    kept = true;
    await replayer.draw(r.reservation.id, 700n, 'call-kept', notes.recorded('kept'));
    const firstTry = frozen.draw(r.reservation, 700n, 'call-kept', notes.recorded('kept'), attempt);
    expect(await firstTry).toMatchObject({ alreadyFinished: true });
    expect(await notes.charged('kept')).toEqual([100n, 700n]);
    expect((await frozen.balance(w.id)).reservedNano).toBe(3_200n);
    await expectJournalAddsUp(getDb(), w.id);
  });
});
