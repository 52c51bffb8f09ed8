// Attack (wt-attack2): since the ledger waits at most LOCK_WAIT_MS (500 ms, retry.ts) for a row lock, a call whose
// vendor fails while another session holds its wallet's rows locked cannot give its hold back: the release
// fails with 55P03 and is never tried again (settlement.ts: "the sweeper returns the hold"), so the hold stays
// after the lock goes, for reservation_ttl_ms (15 minutes as shipped) until the sweeper expires it. Meanwhile the
// wallet cannot spend it (a wallet near empty is refused 402 for money no call uses) and GET /v1/credits reports
// it reserved. Charges go back to the charge writer and land once the lock goes; a release should too.
// Leases off (a leased hold is given back in memory). At b319ae5 the release waited for the lock, then landed:
// nothing stayed held. On main the call is answered at once (502) and the hold stays.
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useSuiteGateway } from '../helpers/leased-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;

describe.skipIf(!canRun)('a vendor failure while the wallet is locked by another session, leases off [postgres]', () => {
  const suite = useSuiteGateway('postgres', { leases: false, routesPerVendor: 1 });
  let pgs: TestPostgres;
  let t: TestGateway;
  beforeAll(() => {
    t = suite.gateway();
    pgs = suite.schema();
  });

  it('gives the hold back once the lock goes', async () => {
    // The vendor holds the call 1.5 s, then drops the connection (no answer: the hold is to be released).
    t.sim.inject('b0', { kind: 'stall', ms: 1_500 });
    const answer = fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', max_completion_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
    }).then(async (r) => ({ status: r.status, body: await r.text() }));
    await new Promise((r) => setTimeout(r, 500)); // held, and at the vendor
    expect(await t.held()).toBeGreaterThan(0n);
    const locker = new pg.Client({ connectionString: pgs.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE', [t.walletId]);
    await locker.query('SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE', [t.walletId]);
    await new Promise((r) => setTimeout(r, 2_500)); // the vendor failed and the release met the lock
    await locker.query('ROLLBACK');
    await locker.end();
    const a = await answer;
    expect(a.status).toBe(502);
    // The lock is gone: within a few seconds nothing is held for a call that has ended.
    let held = await t.held();
    for (let i = 0; i < 50 && held > 0n; i++) {
      await new Promise((r) => setTimeout(r, 100));
      held = await t.held();
    }
    const rows = await pgs.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM reservations WHERE wallet_id = $1 AND state = 'held'`, [
      t.walletId,
    ]);
    expect({ held, reservationsHeld: rows.rows[0]!.n }).toEqual({ held: 0n, reservationsHeld: 0 });
  }, 60_000);
});
