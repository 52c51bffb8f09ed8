// Loads config/*.yaml (doors, vendors, billing, limits, rules), each against its schema.
import { join } from 'node:path';
import type { Refusal } from '../core/call.ts';
import type { ModelKind, VendorId } from '../core/types.ts';
import { ConfigFileError, loadYaml } from './yaml-file.ts';

export interface RefusalConfig extends Refusal {
  vendors?: VendorId[];
}

export interface ProtocolConfig {
  upstream: string;
  /** The vendor's error body shape on this protocol (default chat). */
  errors?: 'chat' | 'messages';
  request: string[];
  answer?: string;
  stream?: string;
  usage?: string;
}

export type DoorBilling = 'tokens' | 'image' | 'video' | 'characters' | 'free';

export interface DoorConfig {
  name: string;
  path: string;
  body: 'json' | 'multipart' | 'json-or-multipart';
  /** Multipart doors: the form names that are files; every other part must be a plain value. */
  files?: string[];
  serves: { kinds: ModelKind[]; vendors: VendorId[] };
  errors: 'chat' | 'messages';
  key_headers: ('bearer' | 'x-api-key')[];
  requires: string[];
  requires_headers: { name: string; pattern: string; say: string }[];
  refuse: RefusalConfig[];
  billing: DoorBilling;
  answer_body: 'json' | 'binary';
  default_model?: string;
  vendor_protocol: Record<string, string>;
  protocols: Record<string, ProtocolConfig>;
}

export interface VendorConfig {
  name: string;
  credential: { header: string; scheme?: string };
  headers: Record<string, string>;
  forward_headers: string[];
}

export interface BillingConfig {
  server_tools: Record<string, number>;
  vendor_d_image_reservation_factor: number;
  plan_restricted_vendors: VendorId[];
  reservation: { max_server_tool_calls: number; image_input_tokens: number; overhead_tokens: number };
}

export interface LimitsConfig {
  call_timeout_ms: Record<string, number>;
  connect_timeout_ms: number;
  body_limit_bytes: number;
  json_max_depth: number;
  file_limit_bytes: number;
  default_max_tokens: number;
  effort_carried_since: string;
  reservation_ttl_ms: number;
  sweep_interval_ms: number;
  retry_after_max_ms: number;
  video_deadline_ms: number;
  video_retention_days: number;
}

export interface RuleConfig {
  doors?: string[];
  drops?: string[];
  lowers_forced_tool_choice?: boolean;
  refuses?: Refusal[];
  vendor_refuses?: Refusal[];
  why: string;
}

/** config/videos.yaml: the video door's parameter table. */
export interface VideoTable {
  prompt_max_chars: number;
  seconds: { min: number; max: number; default: number };
  resolutions: string[];
  aspect_ratios: string[];
  defaults: { resolution: string; aspect_ratio: string };
  sizes: Record<string, { resolution: string; aspect_ratio: string }>;
  deliver_attempts: number;
}

export interface GatewayConfig {
  dir: string;
  doors: Record<string, DoorConfig>;
  vendors: Record<VendorId, VendorConfig>;
  billing: BillingConfig;
  limits: LimitsConfig;
  rules: Record<string, RuleConfig>;
  videos: VideoTable;
}

type RawDoor = Omit<DoorConfig, 'name' | 'body' | 'billing' | 'answer_body' | 'requires_headers' | 'refuse'> &
  Partial<Pick<DoorConfig, 'body' | 'billing' | 'answer_body' | 'requires_headers' | 'refuse'>>;

export function loadConfig(dir: string): GatewayConfig {
  const schema = (name: string) => join(dir, 'schemas', `${name}.schema.json`);
  const file = (name: string) => join(dir, `${name}.yaml`);
  const doorsFile = loadYaml<Record<string, RawDoor>>(file('doors'), schema('doors'));
  const vendors = loadYaml<Record<VendorId, Partial<VendorConfig>>>(file('vendors'), schema('vendors')).data;
  const config: GatewayConfig = {
    dir,
    doors: Object.fromEntries(Object.entries(doorsFile.data).map(([name, raw]) => [name, withDoorDefaults(name, raw)])),
    vendors: Object.fromEntries(
      Object.entries(vendors).map(([id, v]) => [id, { headers: {}, forward_headers: [], ...v } as VendorConfig]),
    ) as Record<VendorId, VendorConfig>,
    billing: loadYaml<BillingConfig>(file('billing'), schema('billing')).data,
    limits: loadYaml<LimitsConfig>(file('limits'), schema('limits')).data,
    rules: loadYaml<Record<string, RuleConfig>>(file('rules'), schema('rules')).data,
    videos: loadYaml<VideoTable>(file('videos'), schema('videos')).data,
  };
  const problems = checkDoors(config, doorsFile.lineOf);
  if (problems.length) throw new ConfigFileError(problems.map((p) => `${file('doors')}:${p}`));
  return config;
}

function withDoorDefaults(name: string, raw: RawDoor): DoorConfig {
  return {
    body: 'json',
    billing: 'tokens',
    answer_body: 'json',
    requires_headers: [],
    refuse: [],
    ...raw,
    name,
  };
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
