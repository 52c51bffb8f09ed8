// A balance threshold's check reads the wallet's lots, then its leases. A lease given back between the two reads
// (another process ending its lease while the check runs) was counted neither as spent nor as moved: the balance
// looked 400 credits higher, the fired threshold re-armed, and the next check fired it again (CI, two processes
// draining one wallet: two events for one crossing). The check reads both in one snapshot.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertBalance } from '../../engine/alert-wiring.ts';
import { AlertWatcher } from '../../engine/alerts/watcher.ts';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db, Transaction } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { usageRecordsOf } from '../helpers/usage-drafts.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
let pgSchema: TestPostgres;

beforeAll(async () => {
  if (canRun) pgSchema = await openTestPostgres({ migrate: true });
}, 60_000);
afterAll(async () => {
  await pgSchema?.cleanup();
});

/** `db`, with `between` run (and awaited) right after the first read of credit_lots in any transaction. */
function withLotsReadHook(db: Db, between: () => Promise<void>): Db {
  let pending = true;
  const hooked = (tx: Transaction): Transaction => ({
    queryAndCommit: tx.queryAndCommit.bind(tx),
    async query(sql, params) {
      const r = await tx.query(sql, params);
      if (pending && sql.includes('FROM credit_lots WHERE wallet_id = ANY')) {
        pending = false;
        await between();
      }
      return r as never;
    },
  });
  return Object.assign(Object.create(db) as Db, {
    transaction: (fn: (tx: Transaction) => Promise<unknown>, opts?: object) => db.transaction((tx) => fn(hooked(tx)), opts),
  });
}

describe.runIf(canRun)('a balance threshold fired before [postgres]', () => {
  it('stays fired when a lease is given back while its check reads the wallet', async () => {
    const db = pgSchema.db;
    const at = new Date();
    const ledger = createLedger(db, { clock: systemClock, owner: 'alerts-lease-reads' });
    const w = (await ledger.createWallet({ credits: 1_000 })).id;
    const records = await usageRecordsOf(db, w, at);
    const lease = await ledger.reserve({ walletId: w, vendor: 'b', amountNano: 500_000n, callId: 'lease:alerts-reads' });
    if (!lease.ok) throw new Error(`lease refused: ${lease.reason}`);
    await ledger.draw(lease.reservation, 400_000n, 'draw-0', records.rows('req-0'), { firstTry: () => true });
    // 600 credits left, at or below 700: the threshold is crossed, and it fired already.
    await db.query(
      `INSERT INTO webhooks (id, wallet_id, url, events, secret, created_at) VALUES ($1, $2, 'http://127.0.0.1:9/', '{balance.threshold_crossed}', 'whsec_x', now())`,
      [`wh_${w}`, w],
    );
    await db.query(
      `INSERT INTO alert_settings (wallet_id, balance_percents, balance_credits, key_monthly_percents, key_daily_percents, updated_at) VALUES ($1, '{}', '{700}', '{}', '{}', now())`,
      [w],
    );
    await db.query(
      `INSERT INTO alert_state (subject, threshold, armed, period, fired_at) VALUES ($1, 'balance_credits:700', false, '', now())`,
      [`wallet:${w}`],
    );

    let given: ReturnType<typeof ledger.release> | undefined;
    const giveBack = async () => void (await (given = ledger.release(lease.reservation)));
    const watcher = (on: Db) =>
      new AlertWatcher({ db: on, clock: systemClock, log: () => ({ error: () => {} }), queued: () => {}, balanceOf: alertBalance });
    await watcher(withLotsReadHook(db, giveBack)).check(w, []);
    await watcher(db).check(w, []);

    expect(await given).toMatchObject({ alreadyFinished: false });
    expect((await alertBalance(db, w, new Date())) / 1000n).toBe(600n);
    const state = await db.query<{ armed: boolean }>(`SELECT armed FROM alert_state WHERE subject = $1`, [`wallet:${w}`]);
    expect(state.rows).toEqual([{ armed: false }]);
    const events = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE wallet_id = $1`, [w]);
    expect(Number(events.rows[0]!.n)).toBe(0);
  }, 30_000);
});
