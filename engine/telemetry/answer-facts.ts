// What a vendor's answer says about itself, for the span: its id, the model that answered and why it stopped.
// Read from a whole answer or event by event from a stream, in the three wire formats the doors speak
// (chat completions, native messages, responses). Pure: no I/O, nothing kept but the facts.
import type { JsonObject } from '../core/types.ts';

export interface AnswerFacts {
  id?: string | undefined;
  model?: string | undefined;
  finishReasons: string[];
}

export const noFacts = (): AnswerFacts => ({ finishReasons: [] });

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Adds what one answer, or one stream event's JSON, says to the facts gathered so far. */
export function gatherFacts(facts: AnswerFacts, json: JsonObject): AnswerFacts {
  // A stream's opening event wraps the answer: `message` (messages), `response` (responses).
  const inner = isObject(json.message) ? json.message : isObject(json.response) ? json.response : json;
  facts.id ??= text(inner.id);
  facts.model ??= text(inner.model);
  for (const reason of finishReasonsOf(json, inner)) if (!facts.finishReasons.includes(reason)) facts.finishReasons.push(reason);
  return facts;
}

function finishReasonsOf(json: JsonObject, inner: JsonObject): string[] {
  const reasons: string[] = [];
  if (Array.isArray(json.choices)) {
    for (const c of json.choices) if (isObject(c) && text(c.finish_reason)) reasons.push(c.finish_reason as string);
  }
  const stop = text(inner.stop_reason) ?? (isObject(json.delta) ? text(json.delta.stop_reason) : undefined);
  if (stop) reasons.push(stop);
  // A responses answer ends with a status; only a finished one names why it stopped.
  const status = json.object === 'response' || isObject(json.response) ? text(inner.status) : undefined;
  if (status && status !== 'in_progress' && status !== 'queued') reasons.push(status);
  return reasons;
}

/** The facts of one SSE data line, when it is JSON worth reading; the cheap test first, since most frames carry text. */
export function gatherEventFacts(facts: AnswerFacts, data: string): AnswerFacts {
  const mayTell =
    facts.id === undefined || data.includes('"finish_reason":"') || data.includes('"stop_reason":"') || data.includes('"status":"');
  if (!mayTell || !data.startsWith('{')) return facts;
  try {
    const json = JSON.parse(data) as unknown;
    return isObject(json) ? gatherFacts(facts, json) : facts;
  } catch {
    return facts;
  }
}
