// The gateway the chaos suite runs against: the real one over loopback with its simulator, on the test
// PostgreSQL when it answers (an in-memory PGlite otherwise, unless REQUIRE_POSTGRES=1), with a short time
// limit on the text doors so a stalled vendor costs the suite seconds, not minutes.
import type { Db } from '../../engine/db/db.ts';
import { askForLease } from '../helpers/budget-leases.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { leasesOn, setLeases } from '../helpers/leased-gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';
import { CHAOS_CALL_TIMEOUT_MS } from './faults.ts';
import type { ChaosTarget } from './harness.ts';

export interface ChaosGateway {
  t: TestGateway;
  target: ChaosTarget;
  db: Db;
  database: 'postgres' | 'pglite';
  close(): Promise<void>;
}

/** Asks for leases of the run's wallet for both vendors and waits until they are granted, so its calls ride them. */
async function takeLeases(t: TestGateway, walletId: string): Promise<void> {
  for (const vendor of ['a', 'b']) await askForLease(t.gw.leases, walletId, vendor, 1n);
  for (let i = 0; i < 200; i++) {
    const r = await t.gw.db.query<{ n: string }>(`SELECT count(*) AS n FROM reservations WHERE wallet_id = $1 AND call_id LIKE 'lease:%'`, [
      walletId,
    ]);
    if (Number(r.rows[0]!.n) >= 2) return;
    await new Promise((res) => setTimeout(res, 5));
  }
  throw new Error('no lease was granted for the run');
}

/**
 * The shipped money path: budget leases on, returned quickly when idle so a run's leases end before the audit.
 * `leases: false`: every call holds its own reservation (as a wallet too small to lease does).
 */
export async function startChaosGateway(opts: { leases?: boolean } = {}): Promise<ChaosGateway> {
  if (!postgresAvailability.ok && REQUIRE_POSTGRES) throw new Error(postgresAvailability.reason);
  const leases = opts.leases ?? true;
  const tree: TempTree = tempCatalogTree();
  if (leases) tree.edit('config/billing.yaml', (y) => leasesOn(y).replace(/^ {2}idle_return_ms: \d+/m, '  idle_return_ms: 150'));
  else setLeases(tree, false);
  tree.edit('config/limits.yaml', (text) =>
    text
      .replace(/ {2}chat: 300000/, `  chat: ${CHAOS_CALL_TIMEOUT_MS}`)
      .replace(/ {2}messages: 300000/, `  messages: ${CHAOS_CALL_TIMEOUT_MS}`)
      .replace(/ {2}responses: 300000/, `  responses: ${CHAOS_CALL_TIMEOUT_MS}`),
  );
  const pg: TestPostgres | null = postgresAvailability.ok ? await openTestPostgres() : null;
  // Events a few ms apart, as a vendor's are: a client's cut lands between events, not after the last.
  const t = await startTestGateway({ dirs: tree, env: pg ? { DATABASE_URL: pg.url } : {}, simulator: { streamChunkDelayMs: 3 } });
  const target: ChaosTarget = {
    url: t.url,
    sim: t.sim,
    db: t.gw.db,
    newWallet: async (credits) => (await t.gw.ledger.createWallet({ credits })).id,
    newApiKey: (walletId, name) => t.gw.keys.createApiKey(walletId, { name }),
    beforeCalls: leases ? (walletId) => takeLeases(t, walletId) : undefined,
  };
  return {
    t,
    target,
    db: t.gw.db,
    database: pg ? 'postgres' : 'pglite',
    async close() {
      await t.close();
      await pg?.cleanup();
      tree.remove();
    },
  };
}
