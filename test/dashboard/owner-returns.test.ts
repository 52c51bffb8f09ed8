// An owner change is final for the old owner's sessions and links, even when that owner comes back
// (X -> Y -> X through the admin API): found by an attack, where X's session from before the first change
// answered 200 again and X's unused link signed in. Real HTTP, on PGlite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds, openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { ADMIN, issueLink, redeem, signIn } from './owner-client.ts';

for (const kind of databaseKinds) {
  const skip = kind === 'postgres' && !postgresAvailability.ok && !REQUIRE_POSTGRES;
  describe.skipIf(skip)(`a returning owner [${kind}]`, () => {
    let t: TestGateway;
    let pg: TestPostgres | undefined;
    beforeAll(async () => {
      if (kind === 'postgres') pg = await openTestPostgres();
      t = await startTestGateway({ env: pg ? { DATABASE_URL: pg.url } : {} });
    });
    afterAll(async () => {
      await t?.close();
      await pg?.cleanup();
    });

    const setOwner = async (walletId: string, owner_id: string) => {
      const res = await fetch(`${t.url}/admin/v1/wallets/${walletId}/owner`, {
        method: 'POST',
        headers: { ...ADMIN, 'content-type': 'application/json' },
        body: JSON.stringify({ owner_id }),
      });
      expect(res.status, await res.clone().text()).toBe(200);
    };

    it('X -> Y -> X: X’s session and unused link from before the first change stay dead; new ones work', async () => {
      const { id: walletId } = await t.gw.ledger.createWallet({ credits: 1000, ownerId: 'owner-x' });
      const session = await signIn(t, walletId);
      const unused = await issueLink(t, walletId);
      expect((await session.get('/dashboard/wallet')).status).toBe(200);

      await setOwner(walletId, 'owner-y');
      expect((await session.get('/dashboard/wallet')).status).toBe(401);
      await setOwner(walletId, 'owner-x');

      expect((await session.get('/dashboard/wallet')).status).toBe(401);
      expect((await session.post('/dashboard/keys', { count: '1', name: 'revived?' })).status).not.toBe(303);
      const stale = await redeem(t, unused.url);
      expect(stale.status).not.toBe(303);
      expect(stale.headers.get('set-cookie') ?? '').not.toMatch(/gateway_dashboard=[^;]/);

      // The owner of the new generation signs in as usual.
      const fresh = await signIn(t, walletId);
      expect((await fresh.get('/dashboard/wallet')).status).toBe(200);
    });

    it('setting the owner the wallet already has is no change: its sessions live on', async () => {
      const { id: walletId } = await t.gw.ledger.createWallet({ credits: 1000, ownerId: 'owner-z' });
      const session = await signIn(t, walletId);
      await setOwner(walletId, 'owner-z');
      expect((await session.get('/dashboard/wallet')).status).toBe(200);
    });
  });
}
