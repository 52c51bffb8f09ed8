// What a vendor's answer says about itself, for the span: its id, the model that answered and why it stopped,
// gathered from a whole answer or event by event from a stream. The vendor's format reads each (its Transcript);
// this file only merges what they state. Pure: no I/O, nothing kept but the facts.
import type { AnswerFacts, Transcript } from '../core/transcript.ts';
import type { JsonObject } from '../core/types.ts';

export const noFacts = (): AnswerFacts => ({ finishReasons: [] });

/** Adds what one answer, or one stream event's JSON, states to the facts gathered so far: the first id and model, every reason once. */
export function gatherFacts(facts: AnswerFacts, json: JsonObject, format: Transcript): AnswerFacts {
  const stated = format.facts(json);
  facts.id ??= stated.id;
  facts.model ??= stated.model;
  for (const reason of stated.finishReasons) if (!facts.finishReasons.includes(reason)) facts.finishReasons.push(reason);
  return facts;
}

/** The facts of one SSE data line, when it is JSON worth reading: until the id is known, and then where an end may be stated. */
export function gatherEventFacts(facts: AnswerFacts, data: string, format: Transcript): AnswerFacts {
  if ((facts.id !== undefined && !format.mayEnd(data)) || !data.startsWith('{')) return facts;
  try {
    const json = JSON.parse(data) as unknown;
    return typeof json === 'object' && json !== null && !Array.isArray(json) ? gatherFacts(facts, json as JsonObject, format) : facts;
  } catch {
    return facts;
  }
}
