// What a reload changed, for its log line: models added, removed, repriced or otherwise changed, the config
// files that differ, and the changed keys that a reload cannot apply because they are read once at start.
import { isDeepStrictEqual } from 'node:util';
import type { ModelEntry } from '../core/types.ts';
import type { Catalog } from './catalog.ts';
import { CONFIG_FILES, type ConfigFile, type DoorConfig, type GatewayConfig } from './config.ts';

interface Loaded {
  config: GatewayConfig;
  catalog: Catalog;
}

export interface ReloadSummary {
  added: string[];
  removed: string[];
  /** Models whose prices changed. */
  repriced: string[];
  /** Models changed in anything but their prices (rules, doors, limits, dates…). */
  changed: string[];
  /** Config files whose content changed. */
  config: ConfigFile[];
  /** Changed keys that take effect only at the next start. */
  needsRestart: string[];
}

/**
 * Keys read once at start: the routes (a door's path, body kind and error body, and which doors exist), the
 * vendors whose GATEWAY_VENDOR_<X>_* routes are read (config/vendors.yaml's keys), the
 * Fastify body limit, the upstream connection pools, the ledger, its sweeper and its audit's timer. Every other
 * key is read from the snapshot a call takes, so a reload applies it to the next call.
 */
const READ_AT_START: {
  limits: (keyof GatewayConfig['limits'])[];
  billing: (keyof GatewayConfig['billing'])[];
  ledger: (keyof LedgerConfig)[];
  door: (keyof DoorConfig)[];
} = {
  limits: [
    'body_limit_bytes',
    'connect_timeout_ms',
    'vendor_connections',
    'vendor_http2_streams',
    'reservation_ttl_ms',
    'sweep_interval_ms',
  ],
  billing: [],
  // billing.ledger.queues is read at each move; only the audit's timer is set once.
  ledger: ['audit_interval_ms'],
  door: ['path', 'body', 'errors'],
};

type LedgerConfig = NonNullable<GatewayConfig['billing']['ledger']>;

export function summariseReload(before: Loaded, after: Loaded): ReloadSummary {
  const old = before.catalog.models;
  const now = after.catalog.models;
  const kept = [...now.keys()].filter((id) => old.has(id));
  return {
    added: [...now.keys()].filter((id) => !old.has(id)).sort(),
    removed: [...old.keys()].filter((id) => !now.has(id)).sort(),
    repriced: kept.filter((id) => !isDeepStrictEqual(old.get(id)!.pricing, now.get(id)!.pricing)).sort(),
    changed: kept.filter((id) => !isDeepStrictEqual(withoutPricing(old.get(id)!), withoutPricing(now.get(id)!))).sort(),
    config: CONFIG_FILES.filter((f) => !isDeepStrictEqual(before.config[f], after.config[f])),
    needsRestart: startKeysChanged(before.config, after.config),
  };
}

/** A model without its prices and without where it was read (moving a model between lines is no change). */
function withoutPricing(m: ModelEntry) {
  const { pricing: _pricing, file: _file, line: _line, ...rest } = m;
  return rest;
}

function startKeysChanged(a: GatewayConfig, b: GatewayConfig): string[] {
  const out: string[] = [];
  for (const key of READ_AT_START.limits) if (!isDeepStrictEqual(a.limits[key], b.limits[key])) out.push(`limits.${key}`);
  for (const key of READ_AT_START.billing) if (!isDeepStrictEqual(a.billing[key], b.billing[key])) out.push(`billing.${key}`);
  for (const key of READ_AT_START.ledger)
    if (!isDeepStrictEqual(a.billing.ledger?.[key], b.billing.ledger?.[key])) out.push(`billing.ledger.${key}`);
  for (const name of [...new Set([...Object.keys(a.doors), ...Object.keys(b.doors)])].sort()) {
    const da = a.doors[name];
    const db = b.doors[name];
    if (!da || !db) out.push(`doors.${name} (${da ? 'removed' : 'added'})`);
    else for (const key of READ_AT_START.door) if (!isDeepStrictEqual(da[key], db[key])) out.push(`doors.${name}.${key}`);
  }
  // A vendor's routes (GATEWAY_VENDOR_<X>_URLS, _KEY) are read at start: one added since has none until then.
  for (const id of Object.keys(b.vendors).filter((v) => !Object.hasOwn(a.vendors, v))) out.push(`vendors.${id} (added)`);
  return out;
}

/** One line for the log: `models added x; repriced y, z; config changed: rules; needs a restart: limits.body_limit_bytes`. */
export function describeReload(s: ReloadSummary): string {
  const lists: [string, readonly string[]][] = [
    ['models added', s.added],
    ['models removed', s.removed],
    ['models repriced', s.repriced],
    ['models changed', s.changed],
    ['config changed', s.config],
    ['needs a restart to apply', s.needsRestart],
  ];
  const parts = lists.filter(([, list]) => list.length > 0).map(([what, list]) => `${what}: ${list.join(', ')}`);
  return parts.length ? parts.join('; ') : 'no change';
}
