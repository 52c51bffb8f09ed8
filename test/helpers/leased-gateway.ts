// A gateway with budget leases on (billing.yaml `leases.enabled`), for the tests of the leased path.
import { afterAll, beforeAll } from 'vitest';
import { openTestPostgres, type TestPostgres } from './databases.ts';
import { METRICS_OPEN_TO_LOOPBACK, startTestGateway, type TestGateway } from './gateway.ts';
import { type TempTree, tempCatalogTree } from './temp-catalog.ts';

/** billing.yaml's text with leases turned on (as shipped), whatever the file said. */
export const leasesOn = (billingYaml: string): string =>
  billingYaml.replace(/^leases:\n {2}enabled: (true|false)/m, 'leases:\n  enabled: true');
/** billing.yaml's text with leases off: every call holds its own reservation (a hold of one call). */
export const leasesOff = (billingYaml: string): string =>
  billingYaml.replace(/^leases:\n {2}enabled: (true|false)/m, 'leases:\n  enabled: false');

/** Turns budget leases on or off in a temporary config tree (a no-op when it already says so). */
export function setLeases(tree: TempTree, on: boolean): void {
  const set = on ? leasesOn : leasesOff;
  const text = tree.read('config/billing.yaml');
  if (set(text) !== text) tree.edit('config/billing.yaml', set);
}

/**
 * An in-process gateway with leases on, on PGlite or on a fresh PostgreSQL schema, started before the suite's
 * tests and closed after them; the returned function gives it to the tests.
 */
export function useLeasedGateway(kind: 'pglite' | 'postgres', credits = 10_000_000): () => TestGateway {
  let tree: TempTree | undefined;
  let schema: TestPostgres | undefined;
  let t: TestGateway | undefined;
  beforeAll(async () => {
    tree = tempCatalogTree();
    setLeases(tree, true);
    if (kind === 'postgres') schema = await openTestPostgres({ migrate: false });
    const env: Record<string, string> = { ...METRICS_OPEN_TO_LOOPBACK, ...(schema ? { DATABASE_URL: schema.url } : {}) };
    t = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog }, env, credits });
  });
  afterAll(async () => {
    await t?.close();
    await schema?.cleanup();
    tree?.remove();
  });
  return () => {
    if (!t) throw new Error('the leased gateway is not started (use it inside a test)');
    return t;
  };
}
