// Token estimates for when a vendor broke its stream before reporting usage: about four characters per
// token, rounded up, so a broken stream is never settled at zero.
import type { JsonObject, JsonValue } from '../../engine/core/types.ts';

export const estimateTokens = (chars: number): number => (chars > 0 ? Math.ceil(chars / 4) : 0);

/**
 * What one image costs the vendors, about: a picture of some 1.2 megapixels at 750 pixels per token. An
 * image's base64 (or its URL) is not text the vendor tokenizes, so it is counted as this instead.
 */
export const IMAGE_TOKENS_ESTIMATE = 1600;

const IMAGE_PART_TYPES = new Set(['image', 'image_url', 'input_image']);

/**
 * The input tokens of the whole body the vendor received: every part of it is input the vendor bills
 * (system, instructions, tool definitions, messages, parameters), so all of its text counts, as JSON
 * characters / 4, and each image counts IMAGE_TOKENS_ESTIMATE. Walked without recursion, whatever the depth.
 */
export function estimateInputTokens(body: JsonObject): number {
  let chars = 0;
  let images = 0;
  const pending: { value: JsonValue; parent: JsonObject | null; key: string | null }[] = [{ value: body, parent: null, key: null }];
  while (pending.length > 0) {
    const { value, parent, key } = pending.pop()!;
    if (isInlineImage(value, parent, key)) images++;
    else if (typeof value === 'string') chars += value.length + 2;
    else if (Array.isArray(value)) {
      chars += 2 + Math.max(0, value.length - 1);
      for (const item of value) pending.push({ value: item, parent: null, key: null });
    } else if (value !== null && typeof value === 'object') {
      if (typeof value.type === 'string' && IMAGE_PART_TYPES.has(value.type)) {
        images++;
        continue;
      }
      const entries = Object.entries(value);
      chars += 2 + Math.max(0, entries.length - 1);
      for (const [k, child] of entries) {
        chars += k.length + 3;
        pending.push({ value: child, parent: value, key: k });
      }
    } else {
      chars += String(value).length;
    }
  }
  return estimateTokens(chars) + images * IMAGE_TOKENS_ESTIMATE;
}

/** An inline image: a `data:image/…` URI, or a native base64 source whose media type is an image. */
function isInlineImage(v: JsonValue, parent: JsonObject | null, key: string | null): boolean {
  if (typeof v !== 'string') return false;
  if (v.startsWith('data:image/')) return true;
  return key === 'data' && parent?.type === 'base64' && typeof parent.media_type === 'string' && parent.media_type.startsWith('image/');
}
