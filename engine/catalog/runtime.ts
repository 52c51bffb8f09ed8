// The catalog and config in force. A call takes one snapshot at its start and keeps it to the end,
// so a reload never changes a call in flight; a broken reload leaves the running snapshot serving.
import { type Catalog, catalogSchemaProblems, readCatalog } from './catalog.ts';
import { type GatewayConfig, type LoadedConfig, readConfig } from './config.ts';
import type { CatalogWarning } from './model-warnings.ts';
import { type ReloadSummary, summariseReload } from './reload-summary.ts';
import { snapshotProblems, snapshotWarnings } from './validate.ts';
import { ConfigFileError } from './yaml-file.ts';

export interface Snapshot {
  readonly config: GatewayConfig;
  readonly catalog: Catalog;
  readonly version: number;
  /** Likely mistakes found when it was loaded (a sale end that has come, a price out of range); none stops it serving. */
  readonly warnings: readonly CatalogWarning[];
}

export interface ReloadResult {
  ok: boolean;
  version: number;
  problems: string[];
  /** What a reload that went through changed. */
  changes?: ReloadSummary;
}

export class Runtime {
  private current: Snapshot;

  constructor(
    private readonly dirs: { config: string; catalog: string },
    initial?: Snapshot,
  ) {
    this.current = initial ?? loadSnapshot(dirs, 1);
  }

  snapshot(): Snapshot {
    return this.current;
  }

  /** Re-reads the YAML; swaps it in only when every file passes. */
  reload(): ReloadResult {
    try {
      const next = loadSnapshot(this.dirs, this.current.version + 1);
      const changes = summariseReload(this.current, next);
      this.current = next;
      return { ok: true, version: next.version, problems: [], changes };
    } catch (e) {
      const problems = e instanceof ConfigFileError ? e.problems : [(e as Error).message];
      return { ok: false, version: this.current.version, problems };
    }
  }
}

/**
 * Reads and checks config/ and catalog/ (start, reload and `catalog check` all come here); throws every
 * problem found. Warnings are as of `now`.
 */
export function loadSnapshot(dirs: { config: string; catalog: string }, version: number, now = new Date()): Snapshot {
  let config: LoadedConfig;
  try {
    config = readConfig(dirs.config);
  } catch (e) {
    // Without the config the catalog's cross-checks cannot run, but its files' own problems are listed too.
    if (e instanceof ConfigFileError) throw new ConfigFileError([...e.problems, ...catalogSchemaProblems(dirs.catalog)]);
    throw e;
  }
  const catalog = readCatalog(dirs.catalog, config.config);
  const problems = snapshotProblems(config, catalog);
  if (problems.length) throw new ConfigFileError(problems);
  return { config: config.config, catalog: catalog.catalog, version, warnings: snapshotWarnings(catalog, now) };
}
