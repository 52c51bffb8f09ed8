// Attack (wt-attack2): the ledger's lock wait (retry.ts LOCK_WAIT_MS) scopes the charge writer's brake to one
// wallet on the belief that a 55P03 means "another session holds THIS wallet's rows" (ChargeWriter.behind(walletId),
// docs/money.md: "a write failing for any other reason still refuses every call"). But a lock on a table every
// charge writes (an operator's `CREATE INDEX` or `ALTER TABLE` on usage_records, a migration of a rolling deploy,
// `LOCK TABLE`) makes every wallet's charge fail with the same 55P03. Then no charge of any wallet can land, yet
// each wallet without a failing charge of its own is still admitted and served: the brake that should refuse
// every call while the ledger takes no writes lets every other wallet through, one answer (or a lease's worth)
// each, all of them on charges the database is not taking.
// Here: usage_records locked in SHARE mode (reads go on, inserts wait). W1's call goes first; its charge fails and
// its answer goes out at risk (past the 3 s commit wait, kept on disk); then W2, a wallet whose rows nobody locked,
// calls: it must be refused (503, nothing charged), as any call is while the ledger takes no writes. Leases on and
// off. Passes at b319ae5 (before the lock wait: W1's at-risk answer engaged the brake for every wallet, W2 got 503);
// fails on main since a4ea736 (W2 is served 200, its charge failing in turn).
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useSuiteGateway } from '../helpers/leased-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;

async function call(t: TestGateway, key: string, tag: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  try {
    const r = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      signal: AbortSignal.timeout(timeoutMs),
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', max_completion_tokens: 50, messages: [{ role: 'user', content: `hi [[sim:call=${tag}]]` }] }),
    });
    return { status: r.status, body: await r.text() };
  } catch {
    return { status: 0, body: '' };
  }
}

for (const leases of [false, true]) {
  describe.skipIf(!canRun)(`a table every charge writes locked by another session, leases ${leases ? 'on' : 'off'} [postgres]`, () => {
    // A data folder, so a charge the database has not taken is kept on disk and its answer may go out first.
    const suite = useSuiteGateway('postgres', { leases, dataFolder: true });
    let pgs: TestPostgres;
    let t: TestGateway;
    beforeAll(() => {
      t = suite.gateway();
      pgs = suite.schema();
    });

    it("no wallet's charge can land: a call of a wallet whose rows nobody locked is refused, not served", async () => {
      const wallets = [];
      for (const name of ['w1', 'w2']) {
        const w = await t.gw.ledger.createWallet({ credits: 10_000_000 });
        wallets.push({ id: w.id, key: (await t.gw.keys.createApiKey(w.id, { name })).key });
      }
      const [w1, w2] = [wallets[0]!, wallets[1]!];
      for (const w of wallets) expect((await call(t, w.key, `warm-${w.id}`, 10_000)).status).toBe(200);
      await t.gw.leases.flushed();

      const locker = new pg.Client({ connectionString: pgs.url });
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE usage_records IN SHARE MODE');
      let second: { status: number; body: string };
      let w2Reached: boolean;
      let first: Promise<{ status: number; body: string }>;
      try {
        first = call(t, w1.key, 'w1-locked', 30_000);
        // W1's charge waits LOCK_WAIT_MS on the table, fails with 55P03, and is retried (the ledger took nothing).
        await new Promise((r) => setTimeout(r, 4_000)); // past the commit wait (3 s): its answer is at risk
        second = await call(t, w2.key, 'w2-during', 10_000);
        w2Reached = t.sim.received.some((r) => JSON.stringify(r.body).includes('w2-during'));
      } finally {
        await locker.query('ROLLBACK');
        await locker.end();
      }
      await first;
      console.log({ leases, w2: second.status, w2Reached, body: second.body.slice(0, 200) });
      // While no charge of any wallet can land, W2 is refused like every other call: the vendor never saw it.
      expect(w2Reached).toBe(false);
      expect(second.status).toBe(503);
    }, 90_000);
  });
}
