// Which objects of a request body a vendor bills as images. Any object shaped as an image part counts an image's
// allowance wherever it sits, since a vendor may read one anywhere; only where the wire formats carry content parts
// is its payload (base64 or URL) known not to be text. Elsewhere its bytes count as text too: the same object in a
// tool's schema or in a system prompt is text a vendor may read.
import { isJsonObject, type JsonObject, type JsonValue } from './types.ts';

const IMAGE_PART_TYPES = new Set(['image', 'image_url', 'input_image']);

/** Document sources the vendors read as text; any other document is billed as an image or by its pages. */
const TEXT_SOURCES = new Set(['text', 'content']);

/** Content parts nest in tool results (a tool result's content is parts again); deeper, a part's bytes count too. */
const MAX_PART_DEPTH = 4;

/** Whether a vendor may bill `v` as an image: an image part, or a document whose source is not text. */
export const billedAsImage = (v: JsonObject): boolean =>
  typeof v.type === 'string' &&
  (IMAGE_PART_TYPES.has(v.type) || (v.type === 'document' && !(isJsonObject(v.source) && TEXT_SOURCES.has(String(v.source.type)))));

/** An image part, or a document whose base64 source is an image: its payload is an image's bytes, not text. */
const carriesImagePayload = (part: JsonObject): boolean =>
  (typeof part.type === 'string' && IMAGE_PART_TYPES.has(part.type)) ||
  (part.type === 'document' &&
    isJsonObject(part.source) &&
    part.source.type === 'base64' &&
    typeof part.source.media_type === 'string' &&
    part.source.media_type.startsWith('image/'));

/**
 * The image parts whose payload is not text: those under the top-level `messages` or `input` list, in each item's
 * `content` or `output` parts, and in the parts of those parts' own `content` (tool results).
 */
export function imagePartsOf(body: JsonObject): Set<JsonObject> {
  const found = new Set<JsonObject>();
  for (const list of [body.messages, body.input]) {
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      if (!isJsonObject(item)) continue;
      collectParts(found, item.content, 1);
      collectParts(found, item.output, 1);
    }
  }
  return found;
}

function collectParts(found: Set<JsonObject>, parts: JsonValue | undefined, depth: number): void {
  if (!Array.isArray(parts) || depth > MAX_PART_DEPTH) return;
  for (const part of parts) {
    if (!isJsonObject(part)) continue;
    if (carriesImagePayload(part)) found.add(part);
    else collectParts(found, part.content, depth + 1);
  }
}
