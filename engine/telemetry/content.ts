// The text of a call, for the span only when the operator opted in
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true): the conventions' message shape, `{role, parts}`,
// recorded as a JSON string. Pure; the caller decides whether to call it at all.
import type { JsonObject } from '../core/types.ts';

type Part = { type: string; content?: unknown; count?: number };
type Message = { role: string; parts: Part[]; finish_reason?: string };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What the client sent: its messages (with the system text first), a responses input, a prompt, or the embeddings
 * door's input (a text or a list of texts, each one message; token ids counted).
 */
export function inputMessages(body: JsonObject): string {
  const out: Message[] = [];
  const system = body.system ?? body.instructions;
  if (system !== undefined) out.push({ role: 'system', parts: partsOf(system) });
  const turns = body.messages ?? body.input;
  if (isTokenIds(turns)) {
    out.push(tokenIdsMessage(turns));
  } else if (Array.isArray(turns)) {
    for (const t of turns) {
      const turn = turnOf(t);
      if (turn) out.push(turn);
    }
  } else if (turns !== undefined) {
    out.push({ role: 'user', parts: partsOf(turns) });
  }
  if (body.prompt !== undefined) out.push({ role: 'user', parts: partsOf(body.prompt) });
  return JSON.stringify(out);
}

/** What the vendor answered: each choice's message, a messages answer's content, or a responses output. */
export function outputMessages(answer: JsonObject): string {
  const out: Message[] = [];
  if (Array.isArray(answer.choices)) {
    for (const c of answer.choices) {
      if (!isObject(c)) continue;
      const m = isObject(c.message) ? c.message : {};
      const reason = typeof c.finish_reason === 'string' ? { finish_reason: c.finish_reason } : {};
      out.push({ role: 'assistant', parts: partsOf(m.content ?? m.tool_calls ?? ''), ...reason });
    }
  } else if (answer.content !== undefined) {
    out.push({ role: 'assistant', parts: partsOf(answer.content) });
  } else if (answer.output !== undefined) {
    out.push({ role: 'assistant', parts: partsOf(answer.output) });
  }
  return JSON.stringify(out);
}

/** One entry of a list input: a turn, an embeddings text, or an embeddings input of token ids; null for anything else. */
function turnOf(t: unknown): Message | null {
  if (isObject(t)) return { role: typeof t.role === 'string' ? t.role : 'user', parts: partsOf(t.content ?? t) };
  if (typeof t === 'string') return { role: 'user', parts: partsOf(t) };
  return isTokenIds(t) ? tokenIdsMessage(t) : null;
}

/** An embeddings input given as token ids (`[1, 2, 3]`), not text. */
const isTokenIds = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((n) => typeof n === 'number');

/** Token ids are counted, not copied: they are no text a reader can use, and one input may hold thousands. */
const tokenIdsMessage = (ids: number[]): Message => ({ role: 'user', parts: [{ type: 'token_ids', count: ids.length }] });

function partsOf(content: unknown): Part[] {
  if (typeof content === 'string') return [{ type: 'text', content }];
  if (!Array.isArray(content)) return [{ type: 'unknown', content }];
  return content.map((p) => {
    if (isObject(p) && typeof p.text === 'string') return { type: 'text', content: p.text };
    return { type: isObject(p) && typeof p.type === 'string' ? p.type : 'unknown', content: p };
  });
}
