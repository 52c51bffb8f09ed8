// Loads catalog/*.yaml into ModelEntry records, each file against catalog/schema.json. What a schema
// cannot see (successors, tiers, rules, doors) is checked by model-checks.ts and validate.ts.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CatalogFile, CatalogModel } from '../core/schema-types.ts';
import type { ModelEntry, ModelKind, VendorId } from '../core/types.ts';
import { type GatewayConfig, loadConfig } from './config.ts';
import { modelProblems } from './model-checks.ts';
import { ConfigFileError, type LoadedYaml, loadYaml, SchemaFileError } from './yaml-file.ts';

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
  /**
   * Models that are written but failed their schema, so are not in `catalog`: a check that finds one named
   * elsewhere (a successor, a door's default) says nothing more, its own problem is already listed.
   */
  broken: ReadonlySet<string>;
  /** Where a value of a model sits (`file:line`), by its path inside the model. */
  at(model: ModelEntry, path: (string | number)[]): string;
}

export function readCatalog(dir: string, cfg: GatewayConfig): LoadedCatalog {
  const problems: string[] = [];
  const models = new Map<string, ModelEntry>();
  const files = new Map<string, LoadedYaml<CatalogFile>>();
  const broken = new Set<string>();
  for (const file of catalogFiles(dir)) {
    const { loaded, sound } = readCatalogFile(file, join(dir, 'schema.json'), problems, broken);
    if (!loaded) continue;
    files.set(file, loaded);
    for (const [id, raw] of Object.entries(loaded.data.models ?? {}).filter(([id]) => sound(id))) {
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
  return { catalog: { dir, models }, problems, broken, at };
}

/**
 * One catalog file against the schema. A file whose errors all sit inside some models still gives the others,
 * so their own checks run in the same pass; `broken` gets the ids left out. Null when nothing can be read.
 */
function readCatalogFile(
  file: string,
  schema: string,
  problems: string[],
  broken: Set<string>,
): { loaded: LoadedYaml<CatalogFile> | null; sound: (id: string) => boolean } {
  try {
    return { loaded: loadYaml<CatalogFile>(file, schema), sound: () => true };
  } catch (e) {
    if (!(e instanceof ConfigFileError)) throw e;
    problems.push(...e.problems);
    if (!(e instanceof SchemaFileError)) return { loaded: null, sound: () => false };
    const loaded = (e as SchemaFileError<CatalogFile>).loaded;
    const models = loaded.data?.models;
    const ids = models !== null && typeof models === 'object' ? Object.keys(models) : [];
    const failed = new Set(e.failedPaths.map((p) => modelOfPointer(p, ids)));
    // An error outside every model (the file's vendor, `models` itself) leaves no model to trust.
    const whole = failed.has(undefined);
    for (const id of ids) if (whole || failed.has(id)) broken.add(id);
    return whole ? { loaded: null, sound: () => false } : { loaded, sound: (id) => !failed.has(id) };
  }
}

/** The model id a JSON pointer such as `/models/b-6/pricing/input` sits in, or undefined when in none. */
function modelOfPointer(pointer: string, ids: string[]): string | undefined {
  const [root, id] = pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  return root === 'models' && id !== undefined && ids.includes(id) ? id : undefined;
}

/** Each catalog file against the schema alone: what can still be said of the catalog when config/ is broken. */
export function catalogSchemaProblems(dir: string): string[] {
  const problems: string[] = [];
  let files: string[];
  try {
    files = catalogFiles(dir);
  } catch {
    return []; // a folder that cannot be listed is said once the config is sound, as it always was
  }
  for (const file of files) {
    try {
      loadYaml<CatalogFile>(file, join(dir, 'schema.json'));
    } catch (e) {
      if (!(e instanceof ConfigFileError)) throw e;
      problems.push(...e.problems);
    }
  }
  return problems;
}

/** The catalog alone, checked model by model against the config (loadSnapshot checks doors and chains too). */
export function loadCatalog(dir: string, config?: GatewayConfig): Catalog {
  const cfg = config ?? loadConfig(process.env.GATEWAY_CONFIG_DIR ?? join(dir, '..', 'config'));
  const loaded = readCatalog(dir, cfg);
  const problems = [...loaded.problems, ...modelProblems(loaded.catalog.models, loaded.at, cfg, loaded.broken)];
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
    retired: raw.retired ?? false,
    data_handling: raw.data_handling ?? null,
    source: raw.source,
    assumed: raw.assumed ?? [],
    file,
    line,
  };
}

const doorsServing = (cfg: GatewayConfig, kind: ModelKind, vendor: VendorId) =>
  Object.values(cfg.doors)
    .filter((d) => d.serves.kinds.includes(kind) && d.serves.vendors.includes(vendor))
    .map((d) => d.name);
