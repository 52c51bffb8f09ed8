// The estimate of a whole answer whose usage figure cannot be read (engine/calls/exchange.ts), from the body it
// answered and the answer's own text; a stream's is made by its tracker (usage-estimate.ts). The body is read for
// images as the caller's format declares (the call's `settings.images`); a caller that names no format has it read
// as any format's, at every content part any of them declares (transforms/protocols/<format>/).
import { everyDeclared, type ImageReading } from '../../engine/core/image-parts.ts';
import type { JsonObject, JsonValue, VendorId } from '../../engine/core/types.ts';
import { protocols } from '../protocols/index.ts';
import { estimateInputTokens, estimateTextTokens, IMAGE_TOKENS_ESTIMATE, type TokenEstimate } from './usage-estimate.ts';

export { estimateUnreadable, IMAGE_TOKENS_ESTIMATE } from './usage-estimate.ts';

/** A body of no named format: every format's content parts are read as its own. */
function anyFormat(): ImageReading {
  const every = everyDeclared(Object.values(protocols));
  return { parts: every, billed: every };
}

/**
 * The token counts of a complete answer whose usage figure cannot be read: the whole request body as input,
 * and every string of the answer but its labels (ids, model, role, stop reason) as output, an image it returns
 * (`b64_json`) counting IMAGE_TOKENS_ESTIMATE rather than its base64's length. It leans a little high (JSON keys
 * count as input); the vendor bills the work either way, and an answer must never be free for lacking a figure.
 */
export function estimateAnswerUsage(
  requestBody: JsonObject,
  answer: JsonObject,
  vendor: VendorId | undefined,
  images: ImageReading = anyFormat(),
): TokenEstimate {
  return { input_tokens: estimateInputTokens(requestBody, vendor, images), output_tokens: answerOutputTokens(answer, vendor) };
}

/** Labels every answer carries whatever the model wrote: not output the vendor bills. */
const ANSWER_LABELS = new Set([
  'id',
  'object',
  'model',
  'role',
  'type',
  'finish_reason',
  'stop_reason',
  'status',
  'system_fingerprint',
  'service_tier',
]);

function answerOutputTokens(answer: JsonValue, vendor: VendorId | undefined): number {
  const text: string[] = [];
  let images = 0;
  const pending: JsonValue[] = [answer];
  while (pending.length > 0) {
    const v = pending.pop()!;
    if (typeof v === 'string') text.push(v);
    else if (Array.isArray(v)) pending.push(...v);
    else if (v !== null && typeof v === 'object') {
      for (const [key, child] of Object.entries(v)) {
        if (key === 'b64_json' && typeof child === 'string') images++;
        else if (!ANSWER_LABELS.has(key)) pending.push(child);
      }
    }
  }
  return estimateTextTokens(text.join('\n'), vendor) + images * IMAGE_TOKENS_ESTIMATE;
}
