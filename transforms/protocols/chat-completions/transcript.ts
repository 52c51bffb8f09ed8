// A chat-completions body as a conversation: its messages (a system prompt is one of them); an answer's choices,
// each with its finish reason, which a stream's chunks carry too.
import type { Transcript } from '../../../engine/core/transcript.ts';
import type { JsonObject } from '../../../engine/core/types.ts';
import { isObject } from '../../util/json.ts';
import { conversation, partsOf, stated, textOf } from '../../util/transcript.ts';

const choicesOf = (answer: JsonObject): JsonObject[] => (Array.isArray(answer.choices) ? answer.choices.filter(isObject) : []);

export const chatTranscript: Transcript = {
  input: (body) => conversation(undefined, body.messages),
  output: (answer) =>
    choicesOf(answer).map((c) => {
      const m = isObject(c.message) ? c.message : {};
      const reason = textOf(c.finish_reason);
      return { role: 'assistant', parts: partsOf(m.content ?? m.tool_calls ?? ''), ...(reason ? { finish_reason: reason } : {}) };
    }),
  facts: (json) =>
    stated(
      json,
      choicesOf(json).map((c) => textOf(c.finish_reason)),
    ),
  mayEnd: (data) => data.includes('"finish_reason":"'),
};
