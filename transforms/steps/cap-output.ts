// The hold covers at most the model's max_output per answer, but some servers give more unless told: open-weight
// hosts default to what is left of the context window when no limit is sent, and honour a limit above
// max_output. For a vendor listed in config/billing.yaml `reservation.output_cap_written` (settings.outputCap),
// a body with no output limit gets one at max_output in the field named there, and a limit above max_output is
// lowered to it. A limit that is not a positive whole number is left for the reservation to refuse by name.
import type { RequestTransform } from '../../engine/core/call.ts';
import type { Step } from '../../engine/core/protocol.ts';
import { given } from '../util/json.ts';

const run: RequestTransform = (call) => {
  const cap = call.settings.outputCap;
  const max = call.model.max_output;
  if (!cap || !max) return call;
  const body = call.body;
  const sent = cap.fields.filter((f) => given(body, f));
  for (const field of sent) {
    const v = body[field];
    if (typeof v === 'number' && v > max) body[field] = max;
  }
  if (sent.length === 0) body[cap.write] = max;
  return call;
};

/** The step as chains name it. */
export const capOutput: Step<RequestTransform> = { name: 'cap-output', run };
