// Speech is priced per character of `input`, fixed before the call: the count is taken here, once, and
// both the reservation and the settlement read it. Characters are Unicode code points.
import type { RequestTransform } from '../../../engine/core/call.ts';
import { errors } from '../../../engine/core/errors.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { emptyUsage } from '../../../engine/core/types.ts';

const run: RequestTransform = (call) => {
  const input = call.body.input;
  if (typeof input !== 'string') throw errors.invalidRequest('input must be a string.', 'input');
  call.notes.fixedUsage = { ...emptyUsage(), characters: [...input].length };
  return call;
};

/** The step as chains name it. */
export const countCharacters: Step<RequestTransform> = { name: 'count-characters', run };
