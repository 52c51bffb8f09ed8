// Every view reads a wallet's lots and its leases in one snapshot. Read apart (an attack, two gateways on one wallet
// with leases granted and given back), a lease granted between the two reads was counted twice: GET /v1/credits
// showed about one lease more than the wallet held, and a negative reserved_credits.
import { expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { spendableOf, spendablesOf } from '../../engine/money/spendable.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const WALLET_NANO = 1_000_000_000n;
const LEASE_NANO = 300_000_000n;
const ROUNDS = 150;

describeEachDatabase('the wallet views', (getDb: () => Db) => {
  it('never count a lease granted or given back meanwhile twice or not at all', async () => {
    const db = getDb();
    const ledger = createLedger(db, { clock: systemClock, owner: 'views-snapshot' });
    const w = await ledger.createWallet({ credits: Number(WALLET_NANO / 1000n) });
    let churning = true;
    const churn = (async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const r = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: LEASE_NANO, callId: 'lease:views-snapshot' });
        if (!r.ok) throw new Error(`lease refused: ${r.reason}`);
        await ledger.noteInFlight([{ reservationId: r.reservation.id, inFlightNano: 100_000_000n }]);
        await ledger.release(r.reservation);
      }
      churning = false;
    })();
    const wrong: string[] = [];
    let polls = 0;
    while (churning && polls < 5_000) {
      polls++;
      const one = await spendableOf(db, w.id);
      const [many] = [...(await spendablesOf(db, [w.id, 'wal_missing'])).values()];
      for (const b of [one, many!]) {
        if (b.reservedNano < 0n || b.availableNano + b.reservedNano !== WALLET_NANO)
          wrong.push(`available ${b.availableNano}, reserved ${b.reservedNano}`);
      }
    }
    await churn;
    expect(polls).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
    await expect(spendableOf(db, 'wal_missing')).rejects.toMatchObject({ status: 404 });
  });
});
