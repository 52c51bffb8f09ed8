// Loads catalog/*.yaml into ModelEntry records and checks what a schema cannot: successors exist,
// tiers sit above their base, rules exist, and every model sits on doors that serve its kind.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type GatewayConfig } from './config.ts';
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

export function loadCatalog(dir: string, config?: GatewayConfig): Catalog {
  const cfg = config ?? loadConfig(process.env.GATEWAY_CONFIG_DIR ?? join(dir, '..', 'config'));
  const problems: string[] = [];
  const models = new Map<string, ModelEntry>();
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
  for (const model of models.values()) problems.push(...checkModel(model, models, cfg));
  if (problems.length) throw new ConfigFileError(problems);
  return { dir, models };
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

function checkModel(m: ModelEntry, all: Map<string, ModelEntry>, cfg: GatewayConfig): string[] {
  const at = `${m.file}:${m.line}: model '${m.id}'`;
  const out: string[] = [];
  const p = m.pricing;
  if (m.successor && !all.has(m.successor)) out.push(`${at}: successor '${m.successor}' does not exist`);
  if (m.successor === m.id) out.push(`${at}: is its own successor`);
  if (m.sale_ends && !m.successor) out.push(`${at}: has a sale-end date but no successor`);
  for (const rule of m.rules) if (!cfg.rules[rule]) out.push(`${at}: rule '${rule}' is not defined in config/rules.yaml`);
  if (m.doors.length === 0) out.push(`${at}: no door serves ${m.kind} models of vendor ${m.vendor}`);
  for (const name of m.doors) {
    const door = cfg.doors[name];
    if (!door) out.push(`${at}: door '${name}' does not exist`);
    else if (!door.serves.kinds.includes(m.kind) || !door.serves.vendors.includes(m.vendor)) {
      out.push(`${at}: door '${name}' does not serve ${m.kind} models of vendor ${m.vendor}`);
    }
  }
  if (m.kind === 'text') out.push(...checkTextPricing(at, m));
  if (p.cache_read !== undefined && p.input !== undefined && p.cache_read >= p.input) {
    out.push(`${at}: cache_read price ${p.cache_read} is not below the input price ${p.input}`);
  }
  if (m.kind === 'image' && p.image_reservation === undefined) out.push(`${at}: image model without image_reservation`);
  if (p.image_charge !== undefined && p.image_reservation !== undefined) {
    const factor = cfg.billing.vendor_d_image_reservation_factor;
    const expected = Math.round(p.image_charge * factor * 1e9);
    if (Math.round(p.image_reservation * 1e9) !== expected) {
      out.push(`${at}: image_reservation ${p.image_reservation} is not ${factor} × image_charge ${p.image_charge} (config/billing.yaml)`);
    }
  }
  if (m.kind === 'video' && !p.video_per_second) out.push(`${at}: video model without video_per_second`);
  for (const resolution of Object.keys(p.video_per_second ?? {})) {
    if (!cfg.videos.resolutions.includes(resolution)) {
      out.push(`${at}: video_per_second names resolution '${resolution}', which config/videos.yaml does not list`);
    }
  }
  if (m.kind === 'speech' && p.per_mchar === undefined) out.push(`${at}: speech model without per_mchar`);
  return out;
}

function checkTextPricing(at: string, m: ModelEntry): string[] {
  const out: string[] = [];
  const p = m.pricing;
  if (p.input === undefined || p.output === undefined) out.push(`${at}: text model without input and output prices`);
  if (!m.max_output) out.push(`${at}: text model without max_output (the reservation needs an upper bound)`);
  if (m.context_window && m.max_output && m.max_output > m.context_window) {
    out.push(`${at}: max_output ${m.max_output} exceeds the context window ${m.context_window}`);
  }
  let previous = 0;
  for (const tier of p.tiers ?? []) {
    if (tier.above_input_tokens <= previous) out.push(`${at}: tier thresholds must rise (${tier.above_input_tokens})`);
    if (m.context_window && tier.above_input_tokens >= m.context_window) {
      out.push(`${at}: tier threshold ${tier.above_input_tokens} is not below the context window ${m.context_window}`);
    }
    if (tier.input < (p.input ?? 0) || tier.output < (p.output ?? 0)) {
      out.push(`${at}: tier above ${tier.above_input_tokens} is priced below the base price`);
    }
    previous = tier.above_input_tokens;
  }
  return out;
}
