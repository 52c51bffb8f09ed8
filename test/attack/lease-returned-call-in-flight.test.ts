// Attack (budget leases): a lease given back while a call admitted on it is still running. The lease is closed
// (no new call is admitted on it) but stays held until its calls end; while it waits it must stay held in the
// database too. Before the fix, only open leases were renewed: a closed one expired `ttl_ms` after its last
// renewal, the sweeper returned its whole hold, the wallet spent that money again, and the call's draw found
// nothing left to charge.
//
// Measured before the fix on `npm start` with PostgreSQL, leases on (ttl_ms 5,000, sweep 1 s), a $1 wallet and
// vendor B streaming slowly: a 16 s stream admitted on the lease (usage 100 in / 5,000 out, 50,125,000 nano);
// one call the wallet could not hold (402: the process gives its leases back); after the lease expired the
// wallet was spent to 0 by other calls; the stream's draw then charged 712,500 of its 50,125,000 nano.
// Any client can close its process's lease (a call it cannot afford) or another process's (the NOTIFY sent when
// a call is refused for credit), and a call of a few minutes outlives the default ttl_ms of 60 s.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import type { LeaseHold } from '../../engine/money/leases.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { leaseSettings } from '../helpers/lease-settings.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const TTL_MS = 400;
const settings = leaseSettings({ ttlMs: TTL_MS });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeEachDatabase('a lease given back while a call on it runs', (getDb: () => Db) => {
  it('stays held past its ttl until the call ends, and the call is charged in full', async () => {
    const db = getDb();
    const ledger = createLedger(db, { clock: systemClock, owner: 'returned-lease-test' });
    const w = await ledger.createWallet({ credits: 100_000 }); // 100,000,000 nano
    const book = budgetLeases(ledger, () => settings);
    const COST = 5_000_000n;
    try {
      let h: LeaseHold | null = null;
      for (let i = 0; i < 200 && !h; i++) {
        h = await book.holdOrWait(w.id, 'b', COST);
        if (!h) await sleep(10);
      }
      expect(h).not.toBeNull();
      // The call runs. The wallet's leases are asked back (a call refused for credit here, or another process's NOTIFY).
      await book.returnWallet(w.id);
      // The call outlives the lease's ttl several times over; the sweeper runs meanwhile.
      for (let i = 0; i < 6; i++) {
        await sleep(TTL_MS / 2);
        await ledger.sweepExpired();
      }
      const lease = await db.query<{ state: string }>(`SELECT state FROM reservations WHERE wallet_id = $1 AND call_id LIKE 'lease:%'`, [
        w.id,
      ]);
      expect(lease.rows.map((r) => r.state)).toEqual(['held']);
      // Everything the wallet can still spend is spent by other calls (the exact path).
      const usable = await ledger.usableNano(w.id, 'b');
      if (usable > 0n) {
        const r = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: usable, callId: 'other-calls' });
        expect(r.ok).toBe(true);
        if (r.ok) await ledger.settle(r.reservation, usable);
      }
      // The long call ends: it is charged what it cost, out of the hold that was kept for it.
      expect(await book.charge(h!, COST, 'long-call', noRows()).committed).toBe(COST);
      await book.flushed();
    } finally {
      await book.close(5_000);
    }
    const draw = await db.query<{ amount_nano: string }>(`SELECT amount_nano::text FROM reservation_draws WHERE draw_id = 'long-call'`);
    expect(draw.rows).toEqual([{ amount_nano: COST.toString() }]);
    expect(await ledger.balance(w.id)).toMatchObject({ reservedNano: 0n });
    const { sum } = await expectJournalAddsUp(db, w.id);
    expect(sum.chargedNano).toBe(100_000_000n - (await ledger.balance(w.id)).availableNano);
  });
});
