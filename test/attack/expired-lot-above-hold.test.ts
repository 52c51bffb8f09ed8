// Attack (wt-moneyattack): a call admitted on a lot that expires while the call runs, and whose vendor then
// reports usage far above the hold. docs/money.md: the call's own hold on the expired lot is charged as held, and
// what a charge takes past its hold comes from the live lots' available balance only ("none is taken from the
// expired lot"), on a lease as on a hold of its own. So the wallet's expiring lot (10,000,000 credits) pays the
// call's hold and at most that; the excess may take only the 50-credit lot that
// does not expire. PGlite, the gateway's clock moved by hand past expires_at while the vendor is still answering;
// leases off (the call's own hold) and on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { setLeases } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const ADMIN = { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' };
const HOUR = 3_600_000;

for (const leases of [false, true]) {
  describe(`an expiring lot and usage above the hold [leases ${leases ? 'on' : 'off'}]`, () => {
    const clock = fixedClock(TEST_NOW);
    let tree: TempTree;
    let t: TestGateway;
    beforeAll(async () => {
      tree = tempCatalogTree();
      setLeases(tree, leases);
      t = await startTestGateway({ clock, dirs: { config: tree.config, catalog: tree.catalog } });
    });
    afterAll(async () => {
      await t?.close();
      tree?.remove();
    });

    it('the excess past the hold is never taken from the expired lot', async () => {
      const w = (await (
        await fetch(`${t.url}/admin/v1/wallets`, { method: 'POST', headers: ADMIN, body: JSON.stringify({ credits: 50 }) })
      ).json()) as any;
      const expiresAt = new Date(clock.now().getTime() + HOUR);
      const lotRes = await fetch(`${t.url}/admin/v1/wallets/${w.id}/credits`, {
        method: 'POST',
        headers: ADMIN,
        body: JSON.stringify({ credits: 10_000_000, expires_at: expiresAt.toISOString() }),
      });
      expect(lotRes.status).toBe(201);
      const lot = (await lotRes.json()) as any;
      const { key } = await t.gw.keys.createApiKey(w.id, { name: 'term' });
      t.sim.inject('b0', { kind: 'delay', ms: 800 });
      const pending = fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'b-6',
          max_completion_tokens: 100,
          messages: [{ role: 'user', content: 'go [[sim:usage input=30 output=200000]]' }],
        }),
      });
      await new Promise((r) => setTimeout(r, 300)); // admitted, the vendor still answering
      clock.set(new Date(expiresAt.getTime() + 1));
      const res = await pending;
      const charged = BigInt(res.headers.get('x-service-charged-nano') ?? '0');
      await res.text();
      await t.gw.leases.flushed();
      const bal = await t.gw.ledger.balance(w.id);
      const exp = bal.lots.find((l) => l.id === lot.lot_id)!;
      const keeps = bal.lots.find((l) => l.id !== lot.lot_id)!;
      const takenFromExpired = exp.grantedNano - exp.availableNano - exp.reservedNano - exp.expiredNano;
      const rec = await t.gw.db.query<{ charged: string }>('SELECT charged_nano::text AS charged FROM usage_records WHERE wallet_id = $1', [
        w.id,
      ]);
      const hold = 30_000n * 100n + 5_000n * 200n; // about: 100 output tokens and a short prompt at b-6's prices
      console.log({
        status: res.status,
        chargedHeader: String(charged),
        recorded: rec.rows.map((r) => r.charged),
        takenFromExpired: String(takenFromExpired),
        keepsLeft: String(keeps.availableNano),
      });
      expect(res.status).toBe(200);
      // The call was admitted in the lot's term, so the lot pays its hold, on a lease as on a hold of its own; the
      // hold is at most a few million nano, and anything far beyond it came from the expired lot.
      expect(takenFromExpired).toBeGreaterThan(0n);
      expect(takenFromExpired).toBeLessThan(hold * 10n);
      await expectJournalAddsUp(t.gw.db, w.id);
    }, 30_000);
  });
}
