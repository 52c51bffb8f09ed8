// A vendor wire format as the engine needs to know it, declared once per format in transforms/protocols/<name>/.
// The engine asks these questions of whichever format a call's vendor speaks and never names a format itself:
// adding a format is a new folder there (its facts and the chains that reach it from each door) and the
// doors.yaml `vendor_protocol` entry naming it, with no engine edit.
import type { AnswerCheck, AnswerTransform, RequestTransform, SseEvent, StreamTranslatorFactory, UsageReader } from './call.ts';
import type { ErrorBody, ErrorType } from './errors.ts';
import type { ImageParts } from './image-parts.ts';
import type { PromptFields } from './prompt-fields.ts';
import type { ToolFields } from './tool-fields.ts';
import type { Transcript } from './transcript.ts';

/**
 * The body fields a format's vendors honour as caps on their work: the only ones that may lower the hold below
 * the model's maximum (a field the vendor ignores would let a client hold little and get much).
 *   output     fields capping output tokens; the largest one sent is held
 *   choices    the field asking for several answers, each up to the output cap
 *   tool_uses  the field on a server tool capping its calls
 *   tool_calls the field capping the server-tool calls of the whole call
 *   tool_results the field on a file search tool capping the results (chunks) each of its calls feeds back as input
 *   compaction where a body asks the vendor to compact its context: entries of `field`.`list` whose type starts with
 *              `type_prefix` make it run summarising passes, billed at the model's prices (held, not a cap)
 */
export interface HonouredLimits {
  output?: string[];
  choices?: string;
  tool_uses?: string;
  tool_calls?: string;
  tool_results?: string;
  compaction?: { field: string; list: string; type_prefix: string };
}

/**
 * A body field naming a model the vendor runs and bills: `field` at the top level, or `field` of each entry of the
 * list `in` (vendor A's advisor tool names the model it runs in `tools[].model`). Every such field is checked
 * against the caller as the call's own `model` is, before anything is held: one the format leaves undeclared
 * would let a key call a model its owner never allowed.
 */
export interface ModelField {
  field: string;
  in?: string;
}

/** How a format's vendors write an error body. */
export interface VendorErrors {
  /**
   * The body as a door answering in this format writes it (config/doors.yaml `errors` names the format); absent when
   * no door's clients read it. A door answering in the same body is sent the vendor's own bytes.
   */
  body?: ErrorBody;
  /** The vendor's error type and message, as far as its body says them. */
  read(body: unknown): { type?: string | undefined; message?: string | undefined };
  /** The vendor's types the client contract does not name, each mapped to one it does; others follow the status. */
  types: Readonly<Record<string, ErrorType>>;
}

/** A transform as a chain runs it, under the name config/billing.yaml and the catalog checks know it by. */
export interface Step<F> {
  name: string;
  run: F;
}

/**
 * How calls of one door reach a format: the vendor's path, the request steps in order, and what reads the answer.
 * A format declares one chain per door that may name it in config/doors.yaml `vendor_protocol`.
 */
export interface Chain {
  upstream: string;
  request: Step<RequestTransform>[];
  /** Refuses a whole answer that lacks what the door answers with, before it is charged; absent when any JSON will do. */
  check?: Step<AnswerCheck>;
  /** Turns the vendor's whole answer into the door's; absent when the door speaks the format itself. */
  answer?: Step<AnswerTransform>;
  /** Relays or translates the vendor's stream; absent when the door never streams from this format. */
  stream?: Step<StreamTranslatorFactory>;
  /** Reads the usage the vendor reports; absent when the door's billing needs none (config/billing.yaml). */
  usage?: Step<UsageReader>;
  /**
   * The client speaks the vendor's own format here, so the vendor's forward_headers (config/vendors.yaml) are
   * passed on from the client; otherwise the gateway's own vendor headers alone are sent.
   */
  forwardsClientHeaders?: boolean;
}

/** Request steps every chain to a format must run, named with the reason the catalog check gives. */
export interface ChainNeed {
  request: string[];
  why: string;
}

/** An answer the vendor stored: its id, and the ids of its output items a later call may name too. */
export interface StoredAnswer {
  id: string;
  items: string[];
}

/** An id a request body names, with the field that names it (`previous_response_id`, `input[2].id`). */
export interface StoredName {
  field: string;
  id: string;
  /** What the vendor would replay: an answer or its item (which the gateway records), or a conversation (which it never makes). */
  kind: 'answer' | 'conversation';
}

/**
 * What a format's vendors store of an answer and let a later call replay by id. One vendor account serves every
 * wallet, so the engine records whose each stored answer is and refuses a body naming one of another wallet.
 */
export interface StoredAnswers {
  /** The answer a whole answer, or one event of its stream, says the vendor stored; null when it says none. */
  answerOf(answer: unknown): StoredAnswer | null;
  /** Whether a stream event may say so (read before the event is parsed, so deltas cost nothing). */
  mayName(event: SseEvent): boolean;
  /** Every id of something stored that a body asks the vendor to replay. */
  namedIn(body: Record<string, unknown>): StoredName[];
}

export interface Protocol {
  errors: VendorErrors;
  /** Whether an event of this format's stream is the vendor reporting a failure; absent for formats that never stream. */
  isStreamError?(event: SseEvent): boolean;
  /**
   * Whether an event is one a stream of this format opens with before the model has written anything (a message's
   * start, a role chunk): kept from the client for a moment, so an error right after it still falls back.
   */
  isStreamOpening?(event: SseEvent): boolean;
  limits: HonouredLimits;
  /** Where its bodies carry image parts (ImageParts); absent when its vendors read none, and every byte of a body counts. */
  images?: ImageParts;
  /**
   * Where its bodies carry the prompt's text, and what makes its vendors pull content in (PromptFields): read with
   * every other format's for the hold's framing and content bounds and the context window's count. Absent for a
   * format whose bodies carry no prompt: its fields then count only where another format declares them too.
   */
  prompt?: PromptFields;
  /**
   * Where its bodies list tools and which of them its vendors run themselves (ToolFields): read with every other
   * format's for the hold and the caps written into the body. Absent for a format whose bodies carry no tools.
   */
  tools?: ToolFields;
  /** Every field of this format's bodies that names a model (`model` first). */
  modelFields: ModelField[];
  /** What every chain calling this format must run so the vendor stays within the hold. */
  needs?: ChainNeed;
  /** What a chain that streams from this format must run so the vendor reports usage in the stream. */
  streamNeeds?: ChainNeed;
  /** How its bodies and answers read as a conversation, for the call's span (Transcript). */
  transcript: Transcript;
  /** What the vendor stores of answers and replays when a body names it; absent for formats that store nothing. */
  stored?: StoredAnswers;
  /** How each door (a key of config/doors.yaml) that may name this format reaches it. */
  chains: Readonly<Record<string, Chain>>;
}
