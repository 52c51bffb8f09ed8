// A client that leaves while its call waits to be admitted (its hold queued behind a busy ledger, or a lease
// being granted): the vendor is not called, nothing is charged and the hold goes back. Before, the vendor was
// called for nobody and the call charged in full (60 of 60 such calls, found by an attack). Leaving after the
// vendor was called still costs what the vendor's usage says (test/chaos: client leaves before the answer).
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const body = JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 16 });

/** Sends a whole call, then resets its socket after `leaveAfterMs`; resolves once the socket is closed. */
function callAndLeave(t: TestGateway, leaveAfterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const req = request(new URL('/v1/chat/completions', t.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('error', () => {});
    req.on('close', () => resolve());
    req.end(body);
    setTimeout(() => req.destroy(), leaveAfterMs);
  });
}

const kinds = [
  { name: 'pglite', postgres: false },
  ...(postgresAvailability.ok || REQUIRE_POSTGRES ? [{ name: 'postgres', postgres: true }] : []),
];

for (const { name, postgres } of kinds)
  describe(`a client that leaves before the vendor is called [${name}]`, () => {
    let t: TestGateway | undefined;
    let pg: TestPostgres | undefined;
    let tree: TempTree | undefined;
    afterEach(async () => {
      await t?.close();
      await pg?.cleanup();
      tree?.remove();
    });

    it('is not served to the vendor and is charged nothing', async () => {
      pg = postgres ? await openTestPostgres() : undefined;
      // A hold of one call (leases off, as for a wallet too small to lease): admission waits on the ledger.
      tree = tempCatalogTree();
      setLeases(tree, false);
      const dirs = { config: tree.config, catalog: tree.catalog };
      t = await startTestGateway(pg ? { dirs, env: { DATABASE_URL: pg.url } } : { dirs });
      const gw = t.gw;
      const served = await fetch(new URL('/v1/chat/completions', t.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
        body,
      });
      expect(served.status).toBe(200); // the key is known now: the next call waits only on its hold
      await served.arrayBuffer();
      const before = await gw.ledger.balance(t.walletId);
      const receivedBefore = t.received('b').length;
      // Holds wait while the wallet's lots are locked, as behind a long ledger batch.
      let unlock!: () => void;
      const unlocked = new Promise<void>((r) => (unlock = r));
      let locked!: () => void;
      const lockTaken = new Promise<void>((r) => (locked = r));
      const blocker = gw.db.transaction(async (tx) => {
        await tx.query('SELECT id FROM credit_lots WHERE wallet_id = $1 FOR UPDATE', [t!.walletId]);
        locked();
        await unlocked;
      });
      await lockTaken;
      const left = Promise.all(Array.from({ length: 3 }, () => callAndLeave(t!, 200)));
      await left;
      await sleep(50);
      unlock();
      await blocker;
      // The holds are taken once the lots are free, then given back: the clients are gone.
      let bal = await gw.ledger.balance(t.walletId);
      for (let i = 0; i < 100 && (bal.reservedNano !== 0n || (await heldCount(t)) > 0); i++) {
        await sleep(20);
        bal = await gw.ledger.balance(t.walletId);
      }
      await sleep(200); // a vendor call made anyway would have arrived by now
      expect(t.received('b').length - receivedBefore, 'the vendor was called for a client that had left').toBe(0);
      expect(bal).toMatchObject({ availableNano: before.availableNano, reservedNano: 0n });
      const holds = await gw.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM reservations WHERE wallet_id = $1 AND state = 'released'`,
        [t.walletId],
      );
      expect(holds.rows[0]!.n, 'the calls never reached their hold: the test did not exercise the case').toBe(3);
      await expectJournalAddsUp(gw.db, t.walletId);
    }, 30_000);
  });

async function heldCount(t: TestGateway): Promise<number> {
  const r = await t.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM reservations WHERE wallet_id = $1 AND state = 'held'`, [
    t.walletId,
  ]);
  return r.rows[0]!.n;
}
