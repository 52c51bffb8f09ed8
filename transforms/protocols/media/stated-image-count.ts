// Images door, for a vendor whose generation request is model, prompt and n: the count is always stated. A
// client that omits n asks for one image (the door refuses any other count), so n: 1 is what the vendor gets.
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';

const run: RequestTransform = (call) => {
  if (call.body.n === undefined || call.body.n === null) call.body.n = 1;
  return call;
};

/** The step as chains name it. */
export const statedImageCount: Step<RequestTransform> = { name: 'stated-image-count', run };
