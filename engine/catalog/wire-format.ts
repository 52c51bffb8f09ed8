// Which vendor wire format (transforms/protocols/) a door's vendor speaks, the chain the door runs to reach it, and
// what every format says of the limit fields: the facts of a format and its chains are declared there once, and
// the door only names it (config/doors.yaml `vendor_protocol`).
import { protocols } from '../../transforms/protocols/index.ts';
import { type ErrorBody, gatewayErrorBody } from '../core/errors.ts';
import { everyDeclared, type ImageParts, type ImageReading, imageReading } from '../core/image-parts.ts';
import { type PromptReading, promptReading } from '../core/prompt-fields.ts';
import type { Chain, HonouredLimits, Protocol } from '../core/protocol.ts';
import { type ToolReading, toolReading } from '../core/tool-fields.ts';
import type { VendorId } from '../core/types.ts';
import { type DoorConfig, protocolNameFor } from './config.ts';

/** The error body of the format `name`, when it is one and declares one (config/doors.yaml `errors`). */
export const errorBodyNamed = (name: string): ErrorBody | undefined =>
  Object.hasOwn(protocols, name) ? protocols[name]!.errors.body : undefined;

/** The error body the door's clients read; the load check refuses a door naming a format without one. */
export const errorBodyOf = (door: DoorConfig): ErrorBody => errorBodyNamed(door.errors) ?? gatewayErrorBody;

/** A format the door's vendor speaks, under its name, with the chain the door runs to it. */
interface DoorWire {
  name: string;
  wire: Protocol;
  chain: Chain;
}

/** The format `name` and its chain from `door`, when both exist (the catalog check refuses a door naming others). */
export function wireNamed(door: DoorConfig, name: string, formats: Record<string, Protocol> = protocols): DoorWire | undefined {
  const wire = Object.hasOwn(formats, name) ? formats[name] : undefined;
  const chain = wire && Object.hasOwn(wire.chains, door.name) ? wire.chains[door.name] : undefined;
  return wire && chain ? { name, wire, chain } : undefined;
}

/** The format `vendor` speaks on `door` and the door's chain to it, or undefined when the door names none. */
export function wireFor(door: DoorConfig, vendor: VendorId, formats: Record<string, Protocol> = protocols): DoorWire | undefined {
  const name = protocolNameFor(door, vendor);
  return name ? wireNamed(door, name, formats) : undefined;
}

/** The limit fields `vendor`'s format honours on `door`: none when it names no format. */
export const honouredLimits = (door: DoorConfig, vendor: VendorId): HonouredLimits => wireFor(door, vendor)?.wire.limits ?? {};

/** The format the door's clients speak: the one its vendors speak by default (`'*'`). */
export function clientFormat(door: DoorConfig): Protocol | undefined {
  const name = door.vendor_protocol['*'];
  return name ? wireNamed(door, name)?.wire : undefined;
}

/**
 * The limit fields of the format the door's clients speak. A chat client's `max_output_tokens` is another format's
 * field: sent to the chat door it limits nothing the client asked for.
 */
export const clientLimits = (door: DoorConfig): HonouredLimits => clientFormat(door)?.limits ?? {};

interface EveryFormat {
  count: number;
  limits: HonouredLimits[];
  images: ImageParts[];
  prompt: PromptReading;
  tools: ToolReading;
}

let known: EveryFormat | undefined;

/** What every format declares, read again when a format is added or removed (a test adds one). */
function everyFormat(): EveryFormat {
  const count = Object.keys(protocols).length;
  if (known?.count !== count) {
    const all = Object.values(protocols);
    const prompt = promptReading(all.flatMap((p) => (p.prompt ? [p.prompt] : [])));
    const tools = toolReading(all.flatMap((p) => (p.tools ? [p.tools] : [])));
    known = { count, limits: all.map((p) => p.limits), images: everyDeclared(all), prompt, tools };
  }
  return known;
}

/** Every format's limit fields, for the checks that hold wherever a field is sent. */
export const everyFormatsLimits = (): HonouredLimits[] => everyFormat().limits;

/**
 * Every format's prompt fields and content pointers read together: the framing and content bounds of a hold, and
 * the context window's count, read a field of any format wherever it sits (engine/core/prompt-fields.ts).
 */
export const everyFormatsPrompt = (): PromptReading => everyFormat().prompt;

/** Every format's tool lists and the tools their vendors run, read together (engine/core/tool-fields.ts). */
export const everyFormatsTools = (): ToolReading => everyFormat().tools;

/** How a body in `format` is read for images: at its own content parts, with every format's image types counted anywhere. */
export const imageReadingOf = (format: Protocol | undefined): ImageReading => imageReading(format?.images, everyFormat().images);
