// How a format's bodies read as a conversation, for the call's span (engine/telemetry/call-trace.ts). A format
// declares it in transforms/protocols/<format>/; the engine reads the client's body in the door's format and the
// vendor's answer and stream in the vendor's, and never names a field itself.
import type { JsonObject } from './types.ts';

/** One part of a message in the GenAI conventions' shape: text as text, anything else typed and kept whole. */
export interface TranscriptPart {
  type: string;
  content?: unknown;
  count?: number;
}

/** A message in the GenAI conventions' shape (`gen_ai.input.messages`, `gen_ai.output.messages`). */
export interface TranscriptMessage {
  role: string;
  parts: TranscriptPart[];
  finish_reason?: string;
}

/** What an answer says about itself: its id, the model that answered and why it stopped. */
export interface AnswerFacts {
  id?: string | undefined;
  model?: string | undefined;
  finishReasons: string[];
}

export interface Transcript {
  /** What the client sent, system text first; read only when the operator opted in to content capture. */
  input(body: JsonObject): TranscriptMessage[];
  /** What the vendor answered in a whole answer; read only when the operator opted in. */
  output(answer: JsonObject): TranscriptMessage[];
  /** What one whole answer, or one event of its stream, states of its id, model and finish reasons. */
  facts(json: JsonObject): AnswerFacts;
  /** Whether a stream event's data may state a finish reason, asked before it is parsed: most events carry text only. */
  mayEnd(data: string): boolean;
}
