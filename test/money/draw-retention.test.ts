// The draws of budget leases are pruned with the usage records (engine/money/draw-retention.ts): old draws of
// leases no longer held go, a held lease's draws and recent draws stay, and no money moves.
import { expect, it } from 'vitest';
import type { Clock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { pruneDraws } from '../../engine/money/draw-retention.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const DAY = 86_400_000;
const T0 = new Date('2026-06-01T00:00:00Z');

describeEachDatabase('draw retention', (getDb: () => Db) => {
  it('removes the old draws of finished leases only, in chunks, and moves no money', async () => {
    let now = T0;
    const clock: Clock = { now: () => now };
    const ledger = createLedger(getDb(), { clock, owner: 'draw-retention-test' });
    const w = await ledger.createWallet({ credits: 1_000_000 });
    const lease = async (callId: string) => {
      const r = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 100_000_000n, callId });
      if (!r.ok) throw new Error('refused');
      return r.reservation;
    };
    const finished = await lease('lease:finished');
    const held = await lease('lease:held');
    for (const id of ['old-1', 'old-2', 'old-3']) await ledger.draw(finished, 1_000n, id);
    await ledger.draw(held, 1_000n, 'old-held');
    await ledger.settle(finished, 3_000n); // what the draws charged stays charged; the rest goes back
    now = new Date(T0.getTime() + 3 * DAY);
    const recent = await lease('lease:recent');
    await ledger.draw(recent, 1_000n, 'recent-1');
    await ledger.release(recent);

    const draws = async () =>
      (await getDb().query<{ draw_id: string }>('SELECT draw_id FROM reservation_draws ORDER BY draw_id')).rows.map((r) => r.draw_id);
    const balance = await ledger.balance(w.id);
    expect(await draws()).toEqual(['old-1', 'old-2', 'old-3', 'old-held', 'recent-1']);

    expect(await pruneDraws(getDb(), new Date(T0.getTime() + DAY), 2)).toBe(3);
    expect(await draws()).toEqual(['old-held', 'recent-1']);
    expect(await ledger.balance(w.id)).toEqual(balance);
    await expectJournalAddsUp(getDb(), w.id);
    expect(await pruneDraws(getDb(), new Date(T0.getTime() + DAY))).toBe(0);
  });
});
