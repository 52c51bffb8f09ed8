// Which objects of a request body a vendor bills as images, not as text. Only a content part where the wire formats
// carry content counts: the same object inside a tool's schema, a system prompt or any other field is text the vendor
// reads, and treating it as an image would hold a fixed allowance for bytes the vendor bills one by one.
import { isJsonObject, type JsonObject, type JsonValue } from './types.ts';

const IMAGE_PART_TYPES = new Set(['image', 'image_url', 'input_image']);

/** Content parts nest in tool results (a tool result's content is parts again); deeper is never an image. */
const MAX_PART_DEPTH = 4;

/**
 * The body's image parts: under the top-level `messages` or `input` list, each item's `content` or `output` parts,
 * and the parts of those parts' own `content`. A part counts when its type is an image part's, or when it is a
 * document whose base64 source is an image (the source object is then the image).
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
    if (!isJsonObject(part) || typeof part.type !== 'string') continue;
    if (IMAGE_PART_TYPES.has(part.type)) found.add(part);
    else if (part.type === 'document' && isImageSource(part.source)) found.add(part.source);
    else collectParts(found, part.content, depth + 1);
  }
}

const isImageSource = (v: JsonValue | undefined): v is JsonObject =>
  isJsonObject(v) && v.type === 'base64' && typeof v.media_type === 'string' && v.media_type.startsWith('image/');
