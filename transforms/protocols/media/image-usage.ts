// Image doors: the number of images returned, plus token usage where the vendor reports it
// (input_tokens includes input_tokens_details.cached_tokens, as in the responses format).
// Vendors that price per image (vendor D) are charged images × the catalog's image_charge by the pricing step.
import type { UsageReader } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { normaliseTokenUsage } from '../../util/usage-figures.ts';

const run: UsageReader = (answer) => {
  const usage = normaliseTokenUsage(answer.usage);
  usage.images = Array.isArray(answer.data) ? answer.data.length : 0;
  return usage;
};

/** The step as chains name it. */
export const imageUsage: Step<UsageReader> = { name: 'image-usage', run };
