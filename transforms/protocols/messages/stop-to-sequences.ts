// Chat door → vendor A: `stop` becomes `stop_sequences`; a single string is wrapped in an array (the native
// field takes only a list; a string would be a vendor 400).
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { bad, describe } from '../../util/json.ts';

const run: RequestTransform = (call) => {
  const stop = call.body.stop;
  delete call.body.stop;
  if (stop === undefined || stop === null) return call;
  const list = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) {
    throw bad(`stop must be a string or an array of strings; got ${describe(stop)}.`, 'stop');
  }
  const sequences = list.filter((s) => s !== '');
  if (sequences.length > 0) call.body.stop_sequences = sequences;
  return call;
};

/** The step as chains name it. */
export const stopToSequences: Step<RequestTransform> = { name: 'stop-to-sequences', run };
