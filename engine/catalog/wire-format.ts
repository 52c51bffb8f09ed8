// Which vendor wire format (transforms/protocols/) a door's chain reaches, and what every format says of the
// limit fields: the facts of a format are declared there once, and the door only names it.
import { protocols } from '../../transforms/protocols/index.ts';
import type { HonouredLimits, Protocol } from '../core/protocol.ts';
import type { VendorId } from '../core/types.ts';
import { type DoorConfig, type ProtocolConfig, protocolNameFor } from './config.ts';

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

/**
 * The limit fields of the format the door's clients speak: the one its chains reach for any vendor (`'*'`). A chat
 * client's `max_output_tokens` is another format's field: sent to the chat door it limits nothing the client asked for.
 */
export function clientLimits(door: DoorConfig): HonouredLimits {
  const name = door.vendor_protocol['*'];
  const chain = name ? door.protocols[name] : undefined;
  return (name && chain ? protocols[wireName(name, chain)]?.limits : undefined) ?? {};
}

let known: { count: number; limits: HonouredLimits[] } = { count: -1, limits: [] };

/** Every format's limit fields, for the checks that hold wherever a field is sent. */
export function everyFormatsLimits(): HonouredLimits[] {
  const count = Object.keys(protocols).length;
  if (known.count !== count) known = { count, limits: Object.values(protocols).map((p) => p.limits) };
  return known.limits;
}
