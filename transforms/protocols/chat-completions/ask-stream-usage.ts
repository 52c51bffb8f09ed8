// Chat door, vendors B–E: a stream reports usage only when asked (stream_options.include_usage). The gateway
// needs it to settle, so it asks when the client did not, and notes it so the relay hides that chunk
// from the client (relay-hiding-injected-usage).
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { isObject } from '../../util/json.ts';

const run: RequestTransform = (call) => {
  const body = call.body;
  if (!(call.stream || body.stream === true)) return call;
  const options = isObject(body.stream_options) ? body.stream_options : {};
  if (options.include_usage === true) return call;
  body.stream_options = { ...options, include_usage: true };
  call.notes.streamUsageInjected = true;
  return call;
};

/** The step as chains name it. */
export const askStreamUsage: Step<RequestTransform> = { name: 'ask-stream-usage', run };
