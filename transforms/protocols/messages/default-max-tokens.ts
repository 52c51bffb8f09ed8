// Chat door → vendor A: the native format requires max_tokens. max_completion_tokens (preferred) or
// max_tokens is carried; when the client sent neither, settings.defaultMaxTokens (8192, or the model's maximum output when
// smaller) is filled in (the vendor refuses a call without it, and chat clients rarely send one).
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { bad, describe } from '../../util/json.ts';

const run: RequestTransform = (call) => {
  const body = call.body;
  const pick = (name: 'max_completion_tokens' | 'max_tokens') => {
    const v = body[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw bad(`${name} must be a positive integer; got ${describe(v)}.`, name);
    return v;
  };
  // The default never asks more than the model writes: the vendor refuses an output limit above its maximum.
  const fallback = Math.min(call.settings.defaultMaxTokens, call.model.max_output || call.settings.defaultMaxTokens);
  const value = pick('max_completion_tokens') ?? pick('max_tokens') ?? fallback;
  delete body.max_completion_tokens;
  body.max_tokens = value;
  return call;
};

/** The step as chains name it. */
export const defaultMaxTokens: Step<RequestTransform> = { name: 'default-max-tokens', run };
