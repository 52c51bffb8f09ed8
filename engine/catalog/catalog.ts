// Loads catalog/*.yaml into ModelEntry records, each file against catalog/schema.json. What a schema
// cannot see (successors, tiers, rules, doors) is checked by model-checks.ts and validate.ts.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type GatewayConfig } from './config.ts';
import { modelProblems } from './model-checks.ts';
import type { CatalogFile, CatalogModel } from '../core/schema-types.ts';
import type { ModelEntry, ModelKind, VendorId } from '../core/types.ts';
import { ConfigFileError, loadYaml, type LoadedYaml } from './yaml-file.ts';

export interface Catalog {
  dir: string;
  models: Map<string, ModelEntry>;
}

export const catalogFiles = (dir: string) =>
  readdirSync(dir)
    .filter((n) => n.endsWith('.yaml') || n.endsWith('.yml'))
    .sort()
    .map((n) => join(dir, n));

export interface LoadedCatalog {
  catalog: Catalog;
  /** Files that failed their schema, models without a vendor or defined twice. */
  problems: string[];
  /** Where a value of a model sits (`file:line`), by its path inside the model. */
  at(model: ModelEntry, path: (string | number)[]): string;
}

export function readCatalog(dir: string, cfg: GatewayConfig): LoadedCatalog {
  const problems: string[] = [];
  const models = new Map<string, ModelEntry>();
  const files = new Map<string, LoadedYaml<CatalogFile>>();
  for (const file of catalogFiles(dir)) {
    let loaded: LoadedYaml<CatalogFile>;
    try {
      loaded = loadYaml<CatalogFile>(file, join(dir, 'schema.json'));
    } catch (e) {
      if (e instanceof ConfigFileError) {
        problems.push(...e.problems);
        continue;
      }
      throw e;
    }
    files.set(file, loaded);
    for (const [id, raw] of Object.entries(loaded.data.models ?? {})) {
      const line = loaded.lineOf(['models', id]);
      const vendor = raw.vendor ?? loaded.data.vendor;
      if (!vendor) {
        problems.push(`${file}:${line}: model '${id}' has no vendor (set it on the model or the file)`);
        continue;
      }
      const existing = models.get(id);
      if (existing) {
        problems.push(`${file}:${line}: model '${id}' is defined twice (first at ${existing.file}:${existing.line})`);
        continue;
      }
      models.set(id, toEntry(id, vendor, raw, file, line, cfg));
    }
  }
  const at = (m: ModelEntry, path: (string | number)[]) => files.get(m.file)?.at(['models', m.id, ...path]) ?? `${m.file}:${m.line}`;
  return { catalog: { dir, models }, problems, at };
}

/** The catalog alone, checked model by model against the config (loadSnapshot checks doors and chains too). */
export function loadCatalog(dir: string, config?: GatewayConfig): Catalog {
  const cfg = config ?? loadConfig(process.env.GATEWAY_CONFIG_DIR ?? join(dir, '..', 'config'));
  const loaded = readCatalog(dir, cfg);
  const problems = [...loaded.problems, ...modelProblems(loaded.catalog.models, loaded.at, cfg)];
  if (problems.length) throw new ConfigFileError(problems);
  return loaded.catalog;
}

function toEntry(id: string, vendor: VendorId, raw: CatalogModel, file: string, line: number, cfg: GatewayConfig): ModelEntry {
  return {
    id,
    vendor,
    kind: raw.kind,
    doors: raw.doors ?? doorsServing(cfg, raw.kind, vendor),
    context_window: raw.context_window ?? null,
    max_output: raw.max_output ?? null,
    pricing: raw.pricing,
    effort_levels: raw.effort_levels ?? null,
    rules: raw.rules ?? [],
    sale_ends: raw.sale_ends ?? null,
    successor: raw.successor ?? null,
    data_handling: raw.data_handling ?? null,
    source: raw.source,
    assumed: raw.assumed ?? [],
    file,
    line,
  };
}

export const doorsServing = (cfg: GatewayConfig, kind: ModelKind, vendor: VendorId) =>
  Object.values(cfg.doors)
    .filter((d) => d.serves.kinds.includes(kind) && d.serves.vendors.includes(vendor))
    .map((d) => d.name);
