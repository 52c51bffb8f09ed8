// How much text a request body carries for the vendor to read: its bytes as JSON writes them, its image parts apart,
// and what it marks for the prompt cache or points at. One walk of the body answers all of them (text-bounds.ts).
import { billedAsImage, type ImageParts, type ImageReading, imagePartsOf } from '../core/image-parts.ts';
import { type PromptReading, pointsAtContent } from '../core/prompt-fields.ts';
import { isJsonObject, type JsonObject, type JsonValue } from '../core/types.ts';
import { everyFormatsPrompt, imageReadingOf } from './wire-format.ts';

/**
 * A top-level entry that is a setting, never prompt text: the model id, the tier (which the door writes where the
 * client sent none, config/doors.yaml `rewrite`), and numbers and switches.
 */
const SETTINGS = new Set(['model', 'service_tier']);
const isTopLevelSetting = (key: string, v: JsonValue) => SETTINGS.has(key) || v === null || typeof v === 'number' || typeof v === 'boolean';

/** What one walk of the body finds: its text's bytes and its images (see measureBody), and what it marks or points at. */
export interface BodyMeasure {
  bytes: number;
  /** The content parts whose payload is an image's, not text (image-parts.ts). */
  imageParts: Set<JsonObject>;
  images: number;
  /** A prompt-cache breakpoint (a format's `prompt.cache_mark` that is not null) anywhere, and one kept an hour. */
  marksCache: boolean;
  marksCacheHour: boolean;
  /** Some object points at content a vendor pulls in, as any format declares it (prompt-fields.ts pointsAtContent). */
  pointsAtContent: boolean;
}

/** The measure as the walk fills it, with what counts as an image, and what points at content, wherever it sits. */
type Walk = BodyMeasure & { billed: readonly ImageParts[]; pointers: PromptReading };

/**
 * UTF-8 bytes of the body's JSON (escapes and separators included), with images counted apart: a content part's
 * base64 or URL is not text the vendor tokenizes, where `images` (the body's format, image-parts.ts) says content
 * parts sit; a body whose format is not named has none. Everything else, however it looks, counts byte for byte,
 * keys and brackets included, except the top-level settings. The same walk notes the cache marks and content
 * pointers anywhere in the body, images and settings included, so the body is walked once for all of them.
 */
export function measureBody(body: JsonObject, images: ImageReading = imageReadingOf(undefined)): BodyMeasure {
  // A part any format declares as pointing at content may be read so by any vendor: every format's pointers count.
  const pointers = everyFormatsPrompt();
  const m: Walk = {
    bytes: 2,
    images: 0,
    imageParts: imagePartsOf(body, images),
    billed: images.billed,
    pointers,
    marksCache: false,
    marksCacheHour: false,
    pointsAtContent: pointsAtContent(body, pointers),
  };
  measureMembers(m, body, true, true);
  return m;
}

/** Adds `v` to the measure; `counted` is false where its bytes are not prompt text (inside an image part, a setting). */
function measureValue(m: Walk, v: JsonValue, counted: boolean): void {
  if (typeof v === 'string') {
    if (counted) m.bytes += jsonBytes(v) + 2;
  } else if (Array.isArray(v)) {
    if (counted) m.bytes += 2 + v.length; // the brackets, and a comma per item (one too many: it errs above)
    for (const item of v) measureValue(m, item, counted);
  } else if (v !== null && typeof v === 'object') {
    if (!m.pointsAtContent && pointsAtContent(v, m.pointers)) m.pointsAtContent = true;
    // What a vendor may bill as an image costs an image's tokens; where it is a content part, its bytes are its payload.
    if (counted && billedAsImage(v, m.billed)) m.images++;
    if (counted && m.imageParts.has(v)) counted = false;
    else if (counted) m.bytes += 2;
    measureMembers(m, v, counted, false);
  } else if (counted) m.bytes += String(v).length;
}

/** Adds an object's members: each key with its quotes, colon and comma, unless a top-level setting's, and each value. */
function measureMembers(m: Walk, object: JsonObject, counted: boolean, topLevel: boolean): void {
  for (const key in object) {
    const child = object[key]!;
    const hours = m.pointers.cacheMarks.get(key);
    if (hours) {
      if (child !== null) m.marksCache = true;
      if (isJsonObject(child) && hours.some((h) => child[h.field] === h.value)) m.marksCacheHour = true;
    }
    const countedHere = counted && !(topLevel && isTopLevelSetting(key, child));
    if (countedHere) m.bytes += jsonBytes(key) + 4;
    measureValue(m, child, countedHere);
  }
}

/** Characters JSON writes as more than themselves: controls as `\u0001`, quotes, backslashes, lone surrogates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
const ESCAPED = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** A string's UTF-8 bytes as the body's JSON carries it: a vendor that reads a tool's schema as JSON counts its escapes. */
const jsonBytes = (s: string): number => (ESCAPED.test(s) ? Buffer.byteLength(JSON.stringify(s)) - 2 : Buffer.byteLength(s));
