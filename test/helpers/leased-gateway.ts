// A gateway with budget leases on (billing.yaml `leases.enabled`), for the tests of the leased path.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

/** How a suite's gateway is set up: its config tree, its database and its own environment. */
export interface SuiteGatewayOptions {
  /** Budget leases on (as shipped) or off. Default on. */
  leases?: boolean;
  credits?: number;
  /** Further edits of the temporary config tree, after the leases'. */
  edit?: (tree: TempTree) => void;
  env?: Record<string, string>;
  routesPerVendor?: number;
  /** A data folder of its own, so charges the database has not taken are kept on disk (GATEWAY_DATA_DIR). */
  dataFolder?: boolean;
}

/** What a suite's tests reach: its gateway and, on PostgreSQL, its schema. */
export interface SuiteGateway {
  gateway: () => TestGateway;
  schema: () => TestPostgres;
}

/**
 * An in-process gateway on PGlite or on a fresh PostgreSQL schema, with its own config tree, started before the
 * suite's tests and closed after them (register it inside the suite's `describe`, so a skipped suite starts none).
 */
export function useSuiteGateway(kind: 'pglite' | 'postgres', opts: SuiteGatewayOptions = {}): SuiteGateway {
  let tree: TempTree | undefined;
  let schema: TestPostgres | undefined;
  let dataDir: string | undefined;
  let t: TestGateway | undefined;
  beforeAll(async () => {
    tree = tempCatalogTree();
    setLeases(tree, opts.leases ?? true);
    opts.edit?.(tree);
    if (kind === 'postgres') schema = await openTestPostgres({ migrate: false });
    if (opts.dataFolder) dataDir = mkdtempSync(join(tmpdir(), 'gw-suite-'));
    const env: Record<string, string> = {
      ...METRICS_OPEN_TO_LOOPBACK,
      ...(schema ? { DATABASE_URL: schema.url } : {}),
      ...(dataDir ? { GATEWAY_DATA_DIR: dataDir } : {}),
      ...opts.env,
    };
    const dirs = { config: tree.config, catalog: tree.catalog };
    t = await startTestGateway({
      dirs,
      env,
      credits: opts.credits ?? 10_000_000,
      ...(opts.routesPerVendor ? { routesPerVendor: opts.routesPerVendor } : {}),
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await schema?.cleanup();
    tree?.remove();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  const started = <T>(x: T | undefined, what: string): T => {
    if (!x) throw new Error(`the suite's ${what} is not there (use it inside a test)`);
    return x;
  };
  return { gateway: () => started(t, 'gateway'), schema: () => started(schema, 'PostgreSQL schema') };
}

/** An in-process gateway with leases on (as shipped), for the tests of the leased path. */
export function useLeasedGateway(kind: 'pglite' | 'postgres', credits = 10_000_000): () => TestGateway {
  return useSuiteGateway(kind, { credits }).gateway;
}
