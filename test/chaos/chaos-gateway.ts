// The gateway the chaos suite runs against: the real one over loopback with its simulator, on the test
// PostgreSQL when it answers (an in-memory PGlite otherwise, unless REQUIRE_POSTGRES=1), with a short time
// limit on the text doors so a stalled vendor costs the suite seconds, not minutes.
import type { Db } from '../../engine/db/db.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { tempCatalogTree, type TempTree } from '../helpers/temp-catalog.ts';
import { CHAOS_CALL_TIMEOUT_MS } from './faults.ts';
import type { ChaosTarget } from './harness.ts';

export interface ChaosGateway {
  t: TestGateway;
  target: ChaosTarget;
  db: Db;
  database: 'postgres' | 'pglite';
  close(): Promise<void>;
}

export async function startChaosGateway(): Promise<ChaosGateway> {
  if (!postgresAvailability.ok && REQUIRE_POSTGRES) throw new Error(postgresAvailability.reason);
  const tree: TempTree = tempCatalogTree();
  tree.edit('config/limits.yaml', (text) =>
    text
      .replace(/  chat: 300000/, `  chat: ${CHAOS_CALL_TIMEOUT_MS}`)
      .replace(/  messages: 300000/, `  messages: ${CHAOS_CALL_TIMEOUT_MS}`)
      .replace(/  responses: 300000/, `  responses: ${CHAOS_CALL_TIMEOUT_MS}`),
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
