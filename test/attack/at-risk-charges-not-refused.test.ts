// Attack (wt-moneyattack): billing.yaml (ledger.commit_wait_ms) says that once an answer went out before its charge
// committed (the database not answering), "new calls are refused with 503 until the database takes it". Here
// the database does not answer one wallet's charges (its row is locked by another session, as a stuck
// transaction or a hung connection would leave it) and the gateway goes on serving one call after another,
// each answered after the commit wait with its charge only queued in memory (gateway_charges{state="at_risk"}
// grows with every call). The charge writer refuses new calls only while a write has *failed*
// (charge-writer.ts `failing`), never while writes hang. Leases on, PostgreSQL, commit_wait_ms 300.
// And the other way: a call sent while a charge is late waits for it (two seconds at most) rather than being refused
// at once, since CI's bench soak once answered 714 calls 503 in a row behind one late charge.

import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useSuiteGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
let pgs: TestPostgres;
let t: TestGateway;

const chat = () =>
  fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5', max_completion_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
  });

describe.skipIf(!canRun)('charges at risk [postgres]', () => {
  const suite = useSuiteGateway('postgres', {
    edit: (tree) => tree.edit('config/billing.yaml', (y) => y.replace(/^ {2}commit_wait_ms: \d+/m, '  commit_wait_ms: 300')),
  });
  beforeAll(() => {
    t = suite.gateway();
    pgs = suite.schema();
  });

  /** A call served first (the wallet's lease is granted), then another session holding the wallet's rows locked. */
  async function lockedAfterACall(): Promise<pg.Client> {
    const warm = await chat();
    expect(warm.status).toBe(200);
    await warm.text();
    const locker = new pg.Client({ connectionString: pgs.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE', [t.walletId]);
    // A charge owed on the lease writes no wallet or lot row: its rollup row is what it waits on.
    await locker.query('SELECT 1 FROM usage_daily WHERE wallet_id = $1 FOR UPDATE', [t.walletId]);
    return locker;
  }

  it('after an answer went out before its charge committed, new calls are refused until the database takes it', async () => {
    const locker = await lockedAfterACall();
    const statuses: number[] = [];
    let atRiskMax = 0;
    try {
      for (let i = 0; i < 12; i++) {
        const r = await chat();
        await r.text();
        statuses.push(r.status);
        const m = await (await fetch(`${t.url}/metrics`)).text();
        atRiskMax = Math.max(atRiskMax, Number(/gateway_charges\{state="at_risk"\} (\d+)/.exec(m)?.[1] ?? 0));
      }
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    await t.gw.leases.flushed();
    console.log({ statuses, atRiskMax });
    await expectJournalAddsUp(t.gw.db, t.walletId);
    // The first call answered at risk may be served; every call after it must be refused (503).
    expect(statuses.slice(1).filter((s) => s === 200)).toEqual([]);
  }, 60_000);

  it('a call sent while a charge is late waits for it to land and is served, when the database takes it soon', async () => {
    const locker = await lockedAfterACall();
    let next: Response;
    try {
      const first = await chat(); // answered at risk, after the 300 ms commit wait
      await first.text();
      expect(first.status).toBe(200);
      const sent = chat();
      await new Promise((r) => setTimeout(r, 400));
      await locker.query('ROLLBACK');
      next = await sent;
    } finally {
      await locker.end();
    }
    expect({ status: next.status, body: await next.text() }).toMatchObject({ status: 200 });
    await t.gw.leases.flushed();
    await expectJournalAddsUp(t.gw.db, t.walletId);
  }, 30_000);
});
