// POST /v1/videos parameters: checked (400 before any charge) and decomposed into what vendor D takes.
// Pure: no I/O. Its figures come from config/videos.yaml; its choices are in engine/videos/README.md.

import type { VideoTable } from '../catalog/config.ts';
import { errors } from '../core/errors.ts';
import type { JsonObject, JsonValue, ModelEntry } from '../core/types.ts';

export interface VideoRequest {
  prompt: string;
  /** What goes to the vendor as `duration`: the client's value exactly as sent (default 4). */
  duration: string | number;
  /** The same as a whole number, for the reservation. */
  seconds: number;
  resolution: string;
  aspectRatio: string;
  /** `<width>x<height>` shown on the job. */
  size: string;
  /** https URL or data URI, passed through as given. */
  imageUrl?: string;
  generateAudio: boolean;
}

/** A starting image sent as a multipart file. */
interface ReferenceFile {
  contentType: string;
  data: Buffer;
}

const has = (body: JsonObject, k: string) => body[k] !== undefined && body[k] !== null;

export function parseVideoRequest(body: JsonObject, model: ModelEntry, table: VideoTable, file?: ReferenceFile): VideoRequest {
  const prompt = body.prompt;
  if (typeof prompt !== 'string' || prompt === '') throw errors.invalidRequest('prompt is required: a non-empty string.', 'prompt');
  const promptChars = [...prompt].length;
  if (promptChars > table.prompt_max_chars) {
    throw errors.invalidRequest(`prompt is ${promptChars} characters long; at most ${table.prompt_max_chars} are accepted.`, 'prompt');
  }

  const { duration, seconds } = parseSeconds(body.seconds, table.seconds);
  const priced = pricedResolutions(model);

  let resolution: string;
  let aspectRatio: string;
  let size: string;
  if (has(body, 'size')) {
    const s = body.size;
    const known = typeof s === 'string' && Object.hasOwn(table.sizes, s) ? table.sizes[s] : undefined;
    if (!known) {
      throw errors.invalidRequest(`size '${shown(s)}' is not offered. Send one of ${Object.keys(table.sizes).join(', ')}.`, 'size');
    }
    resolution = known.resolution;
    aspectRatio = known.aspect_ratio;
    size = s as string;
  } else {
    const fallback = priced.includes(table.defaults.resolution) ? table.defaults.resolution : priced[0];
    resolution = pick(body, 'resolution', table.resolutions, fallback);
    aspectRatio = pick(body, 'aspect_ratio', table.aspect_ratios, table.defaults.aspect_ratio);
    size = sizeOf(resolution, aspectRatio);
  }
  if (!priced.includes(resolution)) {
    throw errors.invalidRequest(
      `${model.id} does not produce ${resolution} video; it produces ${priced.join(', ')}. Choose another size or resolution, ` +
        `or a model that produces ${resolution}.`,
      has(body, 'size') ? 'size' : 'resolution',
    );
  }

  const imageUrl = startingImage(body, file);
  const generateAudio = parseBool(body.generate_audio, 'generate_audio', true);
  return { prompt, duration, seconds, resolution, aspectRatio, size, ...(imageUrl ? { imageUrl } : {}), generateAudio };
}

/**
 * The resolutions the model has a price per second for, never none: the catalog's checks refuse a video model
 * without video_per_second, and one priced at no resolution could make no video at all.
 */
function pricedResolutions(model: ModelEntry): [string, ...string[]] {
  const [first, ...rest] = Object.keys(model.pricing.video_per_second ?? {});
  if (first === undefined) throw errors.unavailable(`${model.id} has no price per second of video in the catalog; it cannot be called.`);
  return [first, ...rest];
}

/** `seconds`: a string such as "4" or an integer in the table's range; the vendor gets it exactly as sent. */
function parseSeconds(v: JsonValue | undefined, range: VideoTable['seconds']): { duration: string | number; seconds: number } {
  if (v === undefined || v === null) return { duration: range.default, seconds: range.default };
  let n: number | undefined;
  if (typeof v === 'number' && Number.isInteger(v)) n = v;
  else if (typeof v === 'string' && /^\d{1,3}$/.test(v)) n = Number(v);
  if (n === undefined || n < range.min || n > range.max) {
    throw errors.invalidRequest(
      `seconds must be a whole number of seconds from ${range.min} to ${range.max}, as a string such as "4" or an integer; got ${JSON.stringify(v)}.`,
      'seconds',
    );
  }
  return { duration: v as string | number, seconds: n };
}

function pick(body: JsonObject, name: string, allowed: readonly string[], fallback: string): string {
  if (!has(body, name)) return fallback;
  const v = body[name];
  if (typeof v !== 'string' || !allowed.includes(v)) {
    throw errors.invalidRequest(`${name} '${shown(v)}' is not offered. Send one of ${allowed.join(', ')}.`, name);
  }
  return v;
}

/** Width x height for a resolution (its short side) and an aspect ratio; even numbers, as encoders want. */
export function sizeOf(resolution: string, aspectRatio: string): string {
  const short = Number.parseInt(resolution, 10);
  const [w = Number.NaN, h = Number.NaN] = aspectRatio.split(':').map(Number);
  const even = (x: number) => Math.ceil(x / 2) * 2;
  if (w === h) return `${short}x${short}`;
  const long = even((short * Math.max(w, h)) / Math.min(w, h));
  return w > h ? `${long}x${short}` : `${short}x${long}`;
}

function startingImage(body: JsonObject, file?: ReferenceFile): string | undefined {
  const candidates: string[] = [];
  if (file) candidates.push('input_reference');
  let url: JsonValue | undefined = body.image_url ?? undefined;
  if (url !== undefined && url !== null) candidates.push('image_url');
  const ref = body.input_reference;
  if (!file && ref !== undefined && ref !== null) {
    // The vendor B SDK's JSON form: input_reference {image_url} (a file_id names an upload this service does not keep).
    if (typeof ref === 'object' && !Array.isArray(ref) && typeof ref.image_url === 'string') url = ref.image_url;
    else if (typeof ref === 'string') url = ref;
    else
      throw errors.invalidRequest(
        'input_reference must be an image file (multipart) or {"image_url": "https://… or data:…"}.',
        'input_reference',
      );
    candidates.push('input_reference');
  }
  if (candidates.length > 1) {
    throw errors.invalidRequest(`Send one starting image: ${candidates.join(' and ')} were both given.`, candidates[1]);
  }
  if (file) {
    if (!/^image\/[\w.+-]+$/i.test(file.contentType)) {
      throw errors.invalidRequest(`input_reference must be an image file; its content type is '${file.contentType}'.`, 'input_reference');
    }
    if (file.data.length === 0) throw errors.invalidRequest('input_reference is an empty file.', 'input_reference');
    return `data:${file.contentType.toLowerCase()};base64,${file.data.toString('base64')}`;
  }
  if (url === undefined || url === null) return undefined;
  if (typeof url !== 'string' || !(isHttpsUrl(url) || /^data:image\/[\w.+-]+(;[^,]*)?,/i.test(url))) {
    throw errors.invalidRequest('image_url must be an https URL or a data URI of an image (data:image/…).', 'image_url');
  }
  return url;
}

function isHttpsUrl(s: string): boolean {
  try {
    return new URL(s).protocol === 'https:';
  } catch {
    return false;
  }
}

function parseBool(v: JsonValue | undefined, name: string, fallback: boolean): boolean {
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true; // multipart values arrive as text
  if (v === 'false') return false;
  throw errors.invalidRequest(`${name} must be true or false.`, name);
}

/** What POST U/v1/videos/generations receives (vendor D's job API, as engine/videos/README.md describes it). */
export function vendorBody(model: string, r: VideoRequest): JsonObject {
  return {
    model,
    prompt: r.prompt,
    duration: r.duration,
    resolution: r.resolution,
    aspect_ratio: r.aspectRatio,
    ...(r.imageUrl ? { image: { url: r.imageUrl } } : {}),
    generate_audio: r.generateAudio,
  };
}

/** A value a client sent, as a refusal quotes it: an object may carry a `toString` that String() would call. */
const shown = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? typeof v));
