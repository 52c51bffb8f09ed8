// The pieces each format's transcript (engine/core/transcript.ts) is built from: a content value as the conventions'
// parts, a list of turns as messages, and a stated id and model. Field names stay in each format's folder.
import type { AnswerFacts, TranscriptMessage, TranscriptPart } from '../../engine/core/transcript.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import { isObject } from './json.ts';

export const textOf = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** A content value as parts: a string is one text part, a block with `text` a text part, anything else kept typed. */
export function partsOf(content: unknown): TranscriptPart[] {
  if (typeof content === 'string') return [{ type: 'text', content }];
  if (!Array.isArray(content)) return [{ type: 'unknown', content }];
  return content.map((p) => {
    if (isObject(p) && typeof p.text === 'string') return { type: 'text', content: p.text };
    return { type: isObject(p) && typeof p.type === 'string' ? p.type : 'unknown', content: p };
  });
}

/** An input given as token ids (`[1, 2, 3]`), not text. */
const isTokenIds = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((n) => typeof n === 'number');

/** Token ids are counted, not copied: they are no text a reader can use, and one input may hold thousands. */
const tokenIdsMessage = (ids: number[]): TranscriptMessage => ({ role: 'user', parts: [{ type: 'token_ids', count: ids.length }] });

/** One entry of a list of turns: a turn with a role, a bare text, or token ids; null for anything else. */
function turnOf(t: unknown, content: string): TranscriptMessage | null {
  if (isObject(t)) return { role: typeof t.role === 'string' ? t.role : 'user', parts: partsOf(t[content] ?? t) };
  if (typeof t === 'string') return { role: 'user', parts: partsOf(t) };
  return isTokenIds(t) ? tokenIdsMessage(t) : null;
}

/**
 * The system text (absent when the format keeps it among the turns), then the turns: a list, one text, or token
 * ids. `content` names the field of a turn holding its content.
 */
export function conversation(system: unknown, turns: unknown, content = 'content'): TranscriptMessage[] {
  const out: TranscriptMessage[] = system === undefined ? [] : [{ role: 'system', parts: partsOf(system) }];
  if (isTokenIds(turns)) out.push(tokenIdsMessage(turns));
  else if (Array.isArray(turns)) {
    for (const t of turns) {
      const turn = turnOf(t, content);
      if (turn) out.push(turn);
    }
  } else if (turns !== undefined) out.push({ role: 'user', parts: partsOf(turns) });
  return out;
}

/** The id and model an answer (or the object a stream event wraps it in) states, and the finish reasons given. */
export const stated = (answer: JsonObject, finishReasons: (string | undefined)[] = []): AnswerFacts => ({
  id: textOf(answer.id),
  model: textOf(answer.model),
  finishReasons: finishReasons.filter((r): r is string => r !== undefined),
});

/** The object under `field` when there is one, else the value itself: a stream's opening event wraps its answer. */
export const unwrapped = (json: JsonObject, field: string): JsonObject => (isObject(json[field]) ? json[field] : json);

/** A format whose answers state no finish reason: its stream events never need parsing for one. */
export const neverEnds = (): boolean => false;
