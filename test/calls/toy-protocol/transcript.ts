// How the toy format reads as a conversation, for the call's span: turns of `parts` in `contents` (the system text in
// `system_instruction`), and answers of `candidates`, each naming its `finish_reason`, with the answer's id and
// model under names of the format's own (`response_id`, `model_version`).
import type { Transcript } from '../../../engine/core/transcript.ts';
import type { JsonObject } from '../../../engine/core/types.ts';
import { conversation, partsOf, textOf } from '../../../transforms/util/transcript.ts';
import { isObject } from './steps.ts';

const candidatesOf = (answer: JsonObject): JsonObject[] => (Array.isArray(answer.candidates) ? answer.candidates.filter(isObject) : []);

export const generateContentTranscript: Transcript = {
  input: (body) => conversation(body.system_instruction, body.contents, 'parts'),
  output: (answer) =>
    candidatesOf(answer).map((c) => {
      const reason = textOf(c.finish_reason);
      const parts = isObject(c.content) ? c.content.parts : undefined;
      return { role: 'assistant', parts: partsOf(parts ?? ''), ...(reason ? { finish_reason: reason } : {}) };
    }),
  facts: (json) => ({
    id: textOf(json.response_id),
    model: textOf(json.model_version),
    finishReasons: candidatesOf(json).flatMap((c) => textOf(c.finish_reason) ?? []),
  }),
  mayEnd: (data) => data.includes('"finish_reason":"'),
};
