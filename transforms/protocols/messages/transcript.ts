// A messages body as a conversation: the system field, then the messages; an answer's content blocks as one turn,
// stopped for its `stop_reason`. A stream states the answer in `message_start` and the reason in `message_delta`.
import type { Transcript } from '../../../engine/core/transcript.ts';
import { isObject } from '../../util/json.ts';
import { conversation, partsOf, stated, textOf, unwrapped } from '../../util/transcript.ts';

export const messagesTranscript: Transcript = {
  input: (body) => conversation(body.system, body.messages),
  output: (answer) => {
    if (answer.content === undefined) return [];
    const reason = textOf(answer.stop_reason);
    return [{ role: 'assistant', parts: partsOf(answer.content), ...(reason ? { finish_reason: reason } : {}) }];
  },
  facts: (json) => {
    const answer = unwrapped(json, 'message');
    return stated(answer, [textOf(answer.stop_reason) ?? (isObject(json.delta) ? textOf(json.delta.stop_reason) : undefined)]);
  },
  mayEnd: (data) => data.includes('"stop_reason":"'),
};
