// Which objects of a request body a vendor bills as images, read off the wire formats' declarations (Protocol
// `images`, in transforms/protocols/<format>/): this reader names no format's fields. An object shaped as an image
// part of any format counts an image's allowance wherever it sits, since a vendor may read one anywhere; only where
// the body's own format carries content parts is its payload (base64 or URL) known not to be text. Elsewhere its
// bytes count as text too: the same object in a tool's schema or in a system prompt is text a vendor may read.
import { derivedFrom } from './derived.ts';
import { isJsonObject, type JsonObject, type JsonValue } from './types.ts';

/**
 * Where a format's bodies carry content parts its vendors read as images. A part of one of `types` costs an
 * image's allowance in any body, whatever its format; only at the positions declared here, in a body of this
 * format, is its payload left out of the body's bytes.
 *   types      part types read as an image
 *   document   a part type holding a document, billed as an image or by its pages unless its `source` member's
 *              type is one of `text_sources`; an `inline` source (its type, and the member naming its media type)
 *              of an image's media type is an image's payload
 *   lists      top-level fields holding the list of messages or items
 *   item_parts fields of each item holding its content parts
 *   nested     the field of a part holding parts again (a tool result's content)
 */
export interface ImageParts {
  types: string[];
  document?: DocumentPart;
  lists: string[];
  item_parts: string[];
  nested?: string;
}

interface DocumentPart {
  type: string;
  source: string;
  text_sources: string[];
  inline: { type: string; media_type: string };
}

/** How a body is read for images. */
export interface ImageReading {
  /** The declarations whose positions carry the body's content parts: its own format's, if it declares one. */
  parts: readonly ImageParts[];
  /** Declarations whose image parts count as images wherever they sit: every format's, and those of `parts`. */
  billed: readonly ImageParts[];
}

/** A body of a format declaring `own` (or nothing), beside every format's declarations. */
export const imageReading = (own: ImageParts | undefined, every: readonly ImageParts[]): ImageReading => ({
  parts: own ? [own] : [],
  // A part whose payload is left out must count as an image, or its bytes would vanish from the hold.
  billed: own && !every.includes(own) ? [...every, own] : every,
});

/** The declarations of `formats`, leaving out those that declare none. */
export const everyDeclared = (formats: readonly { images?: ImageParts | undefined }[]): ImageParts[] =>
  formats.flatMap((f) => (f.images ? [f.images] : []));

/** The image types and documents of some declarations, for the lookup made for every object of a body. */
const billedTypes = derivedFrom((formats: readonly ImageParts[]) => ({
  images: new Set(formats.flatMap((f) => f.types)),
  documents: formats.flatMap((f) => (f.document ? [f.document] : [])),
}));

/** Whether a vendor may bill `v` as an image: an image part of one of `formats`, or a document whose source is not text. */
export function billedAsImage(v: JsonObject, formats: readonly ImageParts[]): boolean {
  if (typeof v.type !== 'string') return false;
  const known = billedTypes(formats);
  return known.images.has(v.type) || known.documents.some((d) => billedDocument(v, d));
}

/** A document of `d`'s type whose source is not one the vendors read as text. */
function billedDocument(v: JsonObject, d: DocumentPart): boolean {
  const source = v[d.source];
  return v.type === d.type && !(isJsonObject(source) && d.text_sources.includes(String(source.type)));
}

/** An image part of `f`, or its document whose inline source is an image: its payload is an image's bytes, not text. */
function carriesImagePayload(part: JsonObject, f: ImageParts): boolean {
  if (typeof part.type === 'string' && f.types.includes(part.type)) return true;
  const d = f.document;
  if (!d || !billedDocument(part, d)) return false;
  const source = part[d.source];
  if (!isJsonObject(source)) return false;
  const media = source[d.inline.media_type];
  return source.type === d.inline.type && typeof media === 'string' && media.startsWith('image/');
}

/** Content parts nest in tool results (a tool result's content is parts again); deeper, a part's bytes count too. */
export const MAX_PART_DEPTH = 4;

/**
 * The image parts whose payload is not text: those in each declared item field of the items of each declared
 * top-level list, and in the declared nested field of those parts (tool results).
 */
export function imagePartsOf(body: JsonObject, reading: ImageReading): Set<JsonObject> {
  const found = new Set<JsonObject>();
  for (const f of reading.parts) {
    for (const list of f.lists) {
      const items = body[list];
      if (!Array.isArray(items)) continue;
      for (const item of items) if (isJsonObject(item)) for (const field of f.item_parts) collectParts(found, f, item[field], 1);
    }
  }
  return found;
}

function collectParts(found: Set<JsonObject>, f: ImageParts, parts: JsonValue | undefined, depth: number): void {
  if (!Array.isArray(parts) || depth > MAX_PART_DEPTH) return;
  for (const part of parts) {
    if (!isJsonObject(part)) continue;
    if (carriesImagePayload(part, f)) found.add(part);
    else if (f.nested) collectParts(found, f, part[f.nested], depth + 1);
  }
}
