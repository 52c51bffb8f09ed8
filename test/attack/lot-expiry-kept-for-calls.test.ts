// Attack (2026-12-02): calls admitted on leases before a term lot's expiry, in flight across it; the expiry pass keeps
// on the lot what their leases' calls hold (in_flight_nano). One of them then reports usage far above its hold, which
// makes its process give back what its leases hold for no call: a process that does not know what the pass gave back
// asked for more than that, and took the money kept for the other calls, which were then charged nothing. docs/money.md:
// every call admitted before the expiry is charged from its hold on the term lot, and a trim never touches an expired lot.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { expireDueLots } from '../../engine/money/lot-expiry.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { leasesOn } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const ADMIN = { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' };
const TERM_MS = 30_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const [over, keeps] of [
  [false, 10],
  [true, 10],
  [true, 20_000],
] as const) {
  describe(`calls in flight across an expiry on leases [one call above its hold: ${over}, permanent credits ${keeps}]`, () => {
    const clock = fixedClock(TEST_NOW);
    let tree: TempTree;
    let t: TestGateway;
    beforeAll(async () => {
      tree = tempCatalogTree();
      tree.edit('config/billing.yaml', (y) => leasesOn(y).replace(/^ {2}min_slice_credits: \d+/m, '  min_slice_credits: 1'));
      t = await startTestGateway({ clock, dirs: { config: tree.config, catalog: tree.catalog } });
    }, 60_000);
    afterAll(async () => {
      await t?.close();
      tree?.remove();
    });

    it('each call admitted before the expiry is charged what it cost, from its hold on the term lot', async () => {
      const w = (await (
        await fetch(`${t.url}/admin/v1/wallets`, { method: 'POST', headers: ADMIN, body: JSON.stringify({ credits: keeps }) })
      ).json()) as any;
      const expiresAt = new Date(clock.now().getTime() + TERM_MS);
      const lotId = (
        (await (
          await fetch(`${t.url}/admin/v1/wallets/${w.id}/credits`, {
            method: 'POST',
            headers: ADMIN,
            body: JSON.stringify({ credits: 2_000_000, expires_at: expiresAt.toISOString() }),
          })
        ).json()) as any
      ).lot_id;
      const { key } = await t.gw.keys.createApiKey(w.id, { name: 'term' });
      const call = (i: number, usage = '') =>
        fetch(`${t.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'b-6', max_completion_tokens: 100, messages: [{ role: 'user', content: `call ${i}${usage}` }] }),
        }).then(async (r) => ({
          status: r.status,
          charged: BigInt(r.headers.get('x-service-charged-nano') ?? '-1'),
          body: await r.text(),
        }));
      for (let i = 0; i < 2; i++) expect((await call(i)).status).toBe(200);
      await t.gw.leases.flushed();

      t.sim.inject('b0', { kind: 'delay', ms: 1500, times: 20 });
      const r0 = t.received('b').length;
      const n = 10;
      const calls = Array.from({ length: n }, (_, i) => call(10 + i, over && i === 0 ? ' [[sim:usage input=30 output=20000]]' : ''));
      for (let i = 0; i < 100 && t.received('b').length < r0 + n; i++) await sleep(20);
      const holds = t.gw.leases.stats().inFlightNano;
      await sleep(400); // in_flight_nano told
      clock.set(new Date(expiresAt.getTime() + 1));
      const pass = await expireDueLots(t.gw.db, 'test', clock.now(), (e) => expect.fail(String(e)));
      expect(pass).toHaveLength(1);
      const outs = await Promise.all(calls);
      await t.gw.leases.flushed();
      await sleep(300);
      await t.gw.leases.flushed();
      const termAfter = await t.gw.db.query<{ s: string }>(
        `SELECT coalesce(sum(amount_nano), 0)::text AS s FROM ledger_journal WHERE lot_id = $1 AND kind = 'settle' AND at >= $2`,
        [lotId, expiresAt],
      );
      await expectJournalAddsUp(t.gw.db, w.id);
      const holdEach = holds / BigInt(n);
      expect(outs.every((o) => o.status === 200)).toBe(true);
      // The plain calls cost 345,000 each, well within their hold; the one above its hold is charged at least its hold.
      for (const [i, o] of outs.entries()) {
        if (over && i === 0) expect(o.charged, `call ${i} above its hold`).toBeGreaterThanOrEqual(holdEach - 100_000n);
        else expect(o.charged, `call ${i}`).toBe(345_000n);
      }
      // The term lot paid each call's hold, or what it cost when less: only the excess of the one above it went elsewhere.
      const fromHolds = outs.reduce((sum, o) => sum + (o.charged < holdEach - 100_000n ? o.charged : holdEach - 100_000n), 0n);
      expect(BigInt(termAfter.rows[0]!.s)).toBeGreaterThanOrEqual(fromHolds);
    }, 60_000);
  });
}
