// Attack (budget leases, operator): a reload that turns leases off left this process's leases holding the
// wallet's money until they went back idle (idle_return_ms, 30 s), and a call short of credit no longer asked
// them back (the ask runs only while leases are on): a call the wallet can pay was refused 402 after the reload.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPostgres, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

describe.each(['pglite', 'postgres'] as const)('leases turned off by a reload while they hold money [%s]', (kind) => {
  let tree: TempTree;
  let schema: TestPostgres | undefined;
  let t: TestGateway;
  beforeAll(async () => {
    tree = tempCatalogTree();
    setLeases(tree, true);
    if (kind === 'postgres') schema = await openTestPostgres({ migrate: false });
    t = await startTestGateway({
      dirs: { config: tree.config, catalog: tree.catalog },
      env: schema ? { DATABASE_URL: schema.url } : {},
      credits: 1_000_000,
    });
  });
  afterAll(async () => {
    await t?.close();
    await schema?.cleanup();
    tree?.remove();
  });

  const chat = (maxTokens: number) =>
    fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'b-6',
        max_completion_tokens: maxTokens,
        messages: [{ role: 'user', content: 'hi [[sim:usage input=10 output=10]]' }],
      }),
    });

  it('serves a call the wallet can pay right after the reload', async () => {
    for (let i = 0; i < 10; i++) {
      const r = await chat(100);
      expect(r.status).toBe(200);
      await r.text();
    }
    await t.gw.leases.flushed();
    const leased = await t.gw.db.query(`SELECT 1 FROM reservations WHERE call_id LIKE 'lease:%' AND state = 'held'`);
    expect(leased.rows.length, 'no lease was taken').toBeGreaterThan(0);
    setLeases(tree, false);
    const reloaded = t.gw.reload();
    expect(JSON.stringify(reloaded)).not.toMatch(/refused/);
    const big = await chat(31_000); // holds about 930,500,000 nano: the wallet has more, part of it in the idle lease
    const body = await big.text();
    expect(big.status, body.slice(0, 300)).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    await expectJournalAddsUp(t.gw.db, t.walletId);
  });
});
