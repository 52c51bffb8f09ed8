// Loads config/*.yaml (doors, vendors, billing, limits, rules), each against its schema.
import { join } from 'node:path';
import type {
  BillingFile,
  DoorsFile,
  DoorYaml,
  LimitsFile,
  ProtocolYaml,
  RefusalYaml,
  RulesFile,
  RuleYaml,
  VendorId,
  VendorsFile,
  VendorYaml,
  VideosFile,
} from '../core/schema-types.ts';
import { ConfigFileError, loadYaml } from './yaml-file.ts';

// The shapes are the schemas' (config/schemas/*.json, through engine/core/schema-types.ts); this file only
// adds what loading fills in.

/** A door refusal; `vendors` narrows it to models of those vendors. */
export type RefusalConfig = RefusalYaml;
export type ProtocolConfig = ProtocolYaml;
export type DoorBilling = NonNullable<DoorYaml['billing']>;

type Defaulted = 'body' | 'billing' | 'answer_body' | 'requires_headers' | 'refuse';

/** What a door that omits these fields gets (fresh lists for each door). */
const doorDefaults = (): Required<Pick<DoorYaml, Defaulted>> => ({
  body: 'json',
  billing: 'tokens',
  answer_body: 'json',
  requires_headers: [],
  refuse: [],
});

/** A door of config/doors.yaml with its defaults filled in and its name (the YAML key) beside them. */
export type DoorConfig = Omit<DoorYaml, Defaulted> & Required<Pick<DoorYaml, Defaulted>> & { name: string };
export type VendorConfig = VendorYaml & Required<Pick<VendorYaml, 'headers' | 'forward_headers'>>;
export type BillingConfig = BillingFile;
export type LimitsConfig = LimitsFile;
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
}

export function loadConfig(dir: string): GatewayConfig {
  const schema = (name: string) => join(dir, 'schemas', `${name}.schema.json`);
  const file = (name: string) => join(dir, `${name}.yaml`);
  const doorsFile = loadYaml<DoorsFile>(file('doors'), schema('doors'));
  const vendors = loadYaml<VendorsFile>(file('vendors'), schema('vendors')).data;
  const config: GatewayConfig = {
    dir,
    doors: Object.fromEntries(Object.entries(doorsFile.data).map(([name, raw]) => [name, withDoorDefaults(name, raw)])),
    vendors: Object.fromEntries(
      Object.entries(vendors).map(([id, v]) => [id, { headers: {}, forward_headers: [], ...v }]),
    ) as Record<VendorId, VendorConfig>,
    billing: loadYaml<BillingFile>(file('billing'), schema('billing')).data,
    limits: loadYaml<LimitsFile>(file('limits'), schema('limits')).data,
    rules: loadYaml<RulesFile>(file('rules'), schema('rules')).data,
    videos: loadYaml<VideosFile>(file('videos'), schema('videos')).data,
  };
  const problems = checkDoors(config, doorsFile.lineOf);
  if (problems.length) throw new ConfigFileError(problems.map((p) => `${file('doors')}:${p}`));
  return config;
}

function withDoorDefaults(name: string, raw: DoorYaml): DoorConfig {
  return { ...doorDefaults(), ...raw, name };
}

/** Every protocol a door names exists, and every vendor the door serves speaks one. */
function checkDoors(config: GatewayConfig, lineOf: (p: string[]) => number): string[] {
  const problems: string[] = [];
  for (const door of Object.values(config.doors)) {
    for (const [vendor, protocol] of Object.entries(door.vendor_protocol)) {
      if (!door.protocols[protocol]) {
        problems.push(`${lineOf([door.name, 'vendor_protocol', vendor])}: door '${door.name}' names protocol '${protocol}', which it does not define`);
      }
    }
    for (const vendor of door.serves.vendors) {
      if (!protocolNameFor(door, vendor)) {
        problems.push(`${lineOf([door.name, 'vendor_protocol'])}: door '${door.name}' serves vendor ${vendor} but names no protocol for it`);
      }
    }
  }
  return problems;
}

export function protocolNameFor(door: DoorConfig, vendor: VendorId): string | undefined {
  return door.vendor_protocol[vendor] ?? door.vendor_protocol['*'];
}
