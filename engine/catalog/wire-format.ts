// Which vendor wire format (transforms/protocols/) a door's chain reaches, and what every format says of the
// limit fields: the facts of a format are declared there once, and the door only names it.
import { protocols } from '../../transforms/protocols/index.ts';
import type { HonouredLimits, Protocol } from '../core/protocol.ts';
import type { VendorId } from '../core/types.ts';
import { protocolNameFor, type DoorConfig, type ProtocolConfig } from './config.ts';

/** The format a door's chain reaches: its `speaks`, else its own name. */
export const wireName = (chainName: string, chain: ProtocolConfig): string => chain.speaks ?? chainName;

/** The format `vendor` speaks on `door`, or undefined when the door names none (the catalog check refuses that). */
function wireOf(door: DoorConfig, vendor: VendorId): Protocol | undefined {
  const name = protocolNameFor(door, vendor);
  const chain = name ? door.protocols[name] : undefined;
  return name && chain ? protocols[wireName(name, chain)] : undefined;
}

/** The limit fields `vendor`'s format honours on `door`: none when it names no format. */
export const honouredLimits = (door: DoorConfig, vendor: VendorId): HonouredLimits => wireOf(door, vendor)?.limits ?? {};

let known: { count: number; limits: HonouredLimits[] } = { count: -1, limits: [] };

/** Every format's limit fields, for the checks that hold wherever a field is sent. */
export function everyFormatsLimits(): HonouredLimits[] {
  const count = Object.keys(protocols).length;
  if (known.count !== count) known = { count, limits: Object.values(protocols).map((p) => p.limits) };
  return known.limits;
}
