// The one object a request becomes. Every step of its chain is a plain function over it.
import type { ImageReading } from './image-parts.ts';
import type { DoorYaml, RefusalYaml } from './schema-types.ts';
import type { ToolReading } from './tool-fields.ts';
import type { JsonObject, ModelEntry, Usage } from './types.ts';

/** A condition over a request body, written in YAML (config/doors.yaml and config/rules.yaml). */
export type { Condition } from './schema-types.ts';

/**
 * A refusal: when the condition holds, `status` (default 400) with `say`, where `{value}` is the offending
 * value; the error type follows from the status.
 */
export type Refusal = RefusalYaml;

/** The effects of a model's named rules on one door, merged. */
/** A value change of a door (config/doors.yaml `rewrite`). */
type Rewrite = NonNullable<DoorYaml['rewrite']>[number];

export interface ResolvedRules {
  names: string[];
  /** Parameters removed before the vendor sees them. */
  drops: string[];
  /** Forced tool choices (`required`, a named function) become `auto`. */
  lowersForcedToolChoice: boolean;
  /** The door's value changes for this vendor (config/doors.yaml `rewrite`): `param` sent as `from` goes as `to`. */
  rewrites: readonly Rewrite[];
  /** Refused by the gateway before any vendor call. */
  refusals: Refusal[];
  /** Refused by the vendor itself (the gateway passes them on; the simulator imitates the vendor). */
  vendorRefusals: Refusal[];
}

export interface Call {
  readonly id: string;
  /** Door name from config/doors.yaml, for example `chat`. */
  readonly door: string;
  readonly model: ModelEntry;
  readonly rules: ResolvedRules;
  /** The body as the client sent it; never changed. */
  readonly client: JsonObject;
  /** The body being built for the vendor. */
  body: JsonObject;
  /**
   * Files of a multipart door, by form name, sent beside `body` (which holds a descriptor under the same name).
   * Absent on JSON doors; when present the vendor gets a multipart body.
   */
  readonly files?: Readonly<Record<string, UploadedFile>>;
  stream: boolean;
  /** Headers to add to the upstream request, beyond the route's credential. */
  upstreamHeaders: Record<string, string>;
  /** What a request transform did that an answer transform must undo. */
  notes: CallNotes;
  readonly settings: CallSettings;
}

/** A file from a multipart form, buffered once (at most `limits.file_limit_bytes`). */
export interface UploadedFile {
  filename: string;
  contentType: string;
  data: Buffer;
}

interface CallNotes {
  /** The gateway asked the vendor for a usage chunk the client did not ask for: hide it. */
  streamUsageInjected?: boolean;
  /** Usage known before the call (speech characters): the reservation and the charge both use it. */
  fixedUsage?: Usage;
  /** What model rules changed in the request (`temperature dropped`, `tool_choice=auto`): the answer's `x-service-adjusted`. */
  adjusted?: string[];
  /** The token bounds the call's hold was sized for, set with the hold of a text call: no estimate exceeds them. */
  heldTokens?: HeldTokens;
}

/**
 * A text call's hold in tokens (engine/calls/hold-size.ts): all the input the vendor may bill, a tool loop's later
 * passes included, and all the output, summaries included.
 */
export type HeldTokens = Pick<Usage, 'input_tokens' | 'output_tokens'>;

/** Constants transforms may read (from config/limits.yaml and config/billing.yaml, and the vendor's wire format). */
interface CallSettings {
  /** max_tokens filled in for vendor A on the chat door when the client sent none. */
  defaultMaxTokens: number;
  /**
   * Server-tool calls the hold covers for a tool the body does not cap, and the fields that cap them on the
   * protocol's wire format: `perTool` on each server tool, `perCall` once for the call (config/billing.yaml
   * reservation). Either may be absent: that wire format takes no such cap.
   */
  serverToolCap: { calls: number; perTool?: string; perCall?: string; results?: { field: string; count: number } };
  /**
   * For a vendor listed in config/billing.yaml `reservation.output_cap_written`: the field written at the model's
   * max_output when the body sends no output limit, and the protocol's output limit fields, lowered to it.
   */
  outputCap?: { write: string; fields: readonly string[] };
  /** Date (YYYY-MM-DD, Korean) since which reasoning_effort moves to the native effort setting. */
  effortCarriedSince: string;
  /** The instant of the call, for date-dependent behaviour. */
  now: Date;
  /** How the body is read for images: where the vendor's format carries content parts, and every format's image types. */
  images: ImageReading;
  /** Where bodies list tools and which tools vendors run themselves: every format's declarations together. */
  tools: ToolReading;
}

export type RequestTransform = (call: Call) => Call;
export type AnswerTransform = (answer: JsonObject, call: Call) => JsonObject;
/**
 * Why a vendor's whole answer cannot serve the door (an image answer without images), in the gateway's own words
 * (never the vendor's text); null when it can. An unusable answer fails its route: the next is asked, nothing is charged.
 */
export type AnswerCheck = (answer: JsonObject) => string | null;

export interface SseEvent {
  event?: string;
  data: string;
}

/** Turns upstream SSE events into the client's SSE frames, reading usage on the way. */
export interface StreamTranslator {
  /** One upstream event in; zero or more complete client frames (`data: …\n\n`) out. */
  push(event: SseEvent): string[];
  /** The upstream ended; the last frames for the client (for example `data: [DONE]`). */
  end(): string[];
  /**
   * Whether the answer's end marker (`message_stop`, `response.completed`, a relayed `data: [DONE]`) was in the
   * frames pushed so far. From then on, and for every frame of `end()`, the relay holds the frames until the
   * call's charge is committed: a client that received the end has been charged.
   */
  answerEnded(): boolean;
  /** Usage seen so far, or an estimate from what was streamed when the vendor reported none. */
  usage(): Usage;
}

export type StreamTranslatorFactory = (call: Call) => StreamTranslator;
/**
 * Reads the vendor's usage figure off a complete answer. A count it cannot read, or a figure that is missing, is
 * NaN: the engine estimates it (transforms/util/estimate.ts `estimateUnreadable`), never charging it as zero.
 */
export type UsageReader = (answer: JsonObject) => Usage;
