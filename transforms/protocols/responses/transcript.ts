// A responses body as a conversation: the instructions, then the input (a text or items); an answer's output
// items as one turn. A finished answer's status says why it stopped; a stream wraps the answer in `response`.
import type { Transcript } from '../../../engine/core/transcript.ts';
import { isObject } from '../../util/json.ts';
import { conversation, partsOf, stated, textOf, unwrapped } from '../../util/transcript.ts';

const UNFINISHED = new Set(['in_progress', 'queued']);

export const responsesTranscript: Transcript = {
  input: (body) => conversation(body.instructions, body.input),
  output: (answer) => (answer.output === undefined ? [] : [{ role: 'assistant', parts: partsOf(answer.output) }]),
  facts: (json) => {
    const answer = unwrapped(json, 'response');
    // Only an answer states a status worth reading: an output item's own status says nothing of the answer's end.
    const status = json.object === 'response' || isObject(json.response) ? textOf(answer.status) : undefined;
    return stated(answer, [status && !UNFINISHED.has(status) ? status : undefined]);
  },
  mayEnd: (data) => data.includes('"status":"'),
};
