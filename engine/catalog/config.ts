// Loads config/*.yaml (doors, vendors, billing, limits, rules, videos, callers), each against its schema.
import { join } from 'node:path';
import type {
  BillingFile,
  CallersFile,
  DoorsFile,
  DoorYaml,
  LimitsFile,
  RulesFile,
  RuleYaml,
  VendorId,
  VendorsFile,
  VendorYaml,
  VideosFile,
} from '../core/schema-types.ts';
import { ConfigFileError, type LoadedYaml, type Locate, loadYaml } from './yaml-file.ts';

// The shapes are the schemas' (config/schemas/*.json, through engine/core/schema-types.ts); this file only
// adds what loading fills in.

type Defaulted = 'body' | 'billing' | 'answer_body' | 'requires_headers' | 'refuse' | 'rewrite';

/** What a door that omits these fields gets (fresh lists for each door). */
const doorDefaults = (): Required<Pick<DoorYaml, Defaulted>> => ({
  body: 'json',
  billing: 'tokens',
  answer_body: 'json',
  requires_headers: [],
  refuse: [],
  rewrite: [],
});

/** A door of config/doors.yaml with its defaults filled in and its name (the YAML key) beside them. */
export type DoorConfig = Omit<DoorYaml, Defaulted> & Required<Pick<DoorYaml, Defaulted>> & { name: string };
export type VendorConfig = VendorYaml & Required<Pick<VendorYaml, 'headers' | 'forward_headers'>>;
export type BillingConfig = BillingFile;
type LimitsConfig = LimitsFile;
export type RuleConfig = RuleYaml;
/** config/videos.yaml: the video door's parameter table. */
export type VideoTable = VideosFile;

export interface GatewayConfig {
  dir: string;
  doors: Record<string, DoorConfig>;
  vendors: Record<VendorId, VendorConfig>;
  billing: BillingConfig;
  limits: LimitsConfig;
  rules: RulesFile;
  videos: VideoTable;
  /** Refusals by who calls (config/callers.yaml). */
  callers: CallersFile;
}

/** The config files, by the name their YAML and schema files share. */
export const CONFIG_FILES = ['doors', 'vendors', 'billing', 'limits', 'rules', 'videos', 'callers'] as const;
export type ConfigFile = (typeof CONFIG_FILES)[number];

export interface LoadedConfig {
  config: GatewayConfig;
  /** Where a value of a config file sits, for problems found after loading. */
  at: Record<ConfigFile, Locate>;
}

/** Reads config/*.yaml, each against its schema; what spans files is checked by validate.ts. */
export function readConfig(dir: string): LoadedConfig {
  const problems: string[] = [];
  // Every file is read before any problem is thrown, so one run names the problems of all of them.
  const read = <T>(name: ConfigFile) => {
    try {
      return loadYaml<T>(join(dir, `${name}.yaml`), join(dir, 'schemas', `${name}.schema.json`));
    } catch (e) {
      if (!(e instanceof ConfigFileError)) throw e;
      problems.push(...e.problems);
      return null as unknown as LoadedYaml<T>; // never read: the problems are thrown below first
    }
  };
  const doors = read<DoorsFile>('doors');
  const vendors = read<VendorsFile>('vendors');
  const billing = read<BillingFile>('billing');
  const limits = read<LimitsFile>('limits');
  const rules = read<RulesFile>('rules');
  const videos = read<VideosFile>('videos');
  const callers = read<CallersFile>('callers');
  if (problems.length) throw new ConfigFileError(problems);
  const config: GatewayConfig = {
    dir,
    doors: Object.fromEntries(Object.entries(doors.data).map(([name, raw]) => [name, withDoorDefaults(name, raw)])),
    vendors: Object.fromEntries(Object.entries(vendors.data).map(([id, v]) => [id, { headers: {}, forward_headers: [], ...v }])),
    billing: billing.data,
    limits: limits.data,
    rules: rules.data,
    videos: videos.data,
    callers: callers.data,
  };
  const at = {
    doors: doors.at,
    vendors: vendors.at,
    billing: billing.at,
    limits: limits.at,
    rules: rules.at,
    videos: videos.at,
    callers: callers.at,
  };
  return { config, at };
}

/** The config alone, each file valid against its schema (loadSnapshot checks it against the catalog too). */
export const loadConfig = (dir: string): GatewayConfig => readConfig(dir).config;

function withDoorDefaults(name: string, raw: DoorYaml): DoorConfig {
  return { ...doorDefaults(), ...raw, name };
}

/** GATEWAY_CONFIG_DIR (default ./config) and GATEWAY_CATALOG_DIR (default ./catalog): where the YAML is. */
export const yamlDirsFrom = (env: Record<string, string | undefined>) => ({
  config: env.GATEWAY_CONFIG_DIR || './config',
  catalog: env.GATEWAY_CATALOG_DIR || './catalog',
});

/** The vendors: config/vendors.yaml's keys, the one list of them. */
export const vendorIdsOf = (cfg: Pick<GatewayConfig, 'vendors'>): VendorId[] => Object.keys(cfg.vendors);

/** The vendor ids of the config folder `dir` (its vendors.yaml, checked against its schema). */
export const vendorIdsIn = (dir: string): VendorId[] =>
  Object.keys(loadYaml<VendorsFile>(join(dir, 'vendors.yaml'), join(dir, 'schemas', 'vendors.schema.json')).data);

export function protocolNameFor(door: DoorConfig, vendor: VendorId): string | undefined {
  return door.vendor_protocol[vendor] ?? door.vendor_protocol['*'];
}
