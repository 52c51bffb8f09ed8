// Vendor B (and D) media paths: images, speech, embeddings, moderations; vendor D's video job API.
import { Counter, countTokens, isObj, parseTags, VendorError } from './common.ts';
import { type Ctx, sendError, sendJson } from './http.ts';

type Obj = Record<string, unknown>;

/** A valid 1×1 PNG. */
export const PNG_1X1_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** Output tokens an image reports, by quality (vendor B reports usage per image). */
const IMAGE_OUTPUT_TOKENS: Record<string, number> = { low: 272, medium: 1056, high: 4160, auto: 1056 };

/** Multipart bodies are recorded as `{fields, files}`. */
export interface MultipartBody {
  fields: Record<string, string>;
  files: { name: string; filename: string; size: number }[];
}

function imageAnswer(ctx: Ctx, prompt: string, quality: unknown, inputImages: number): void {
  const tags = parseTags(prompt);
  const c = new Counter();
  c.text(prompt);
  const textTokens = c.textTokens();
  const imageTokens = 85 * inputImages;
  const input = tags.usage.input ?? textTokens + imageTokens;
  const output = tags.usage.output ?? IMAGE_OUTPUT_TOKENS[typeof quality === 'string' ? quality : 'auto'] ?? 1056;
  sendJson(ctx.res, 200, {
    created: Math.floor(Date.now() / 1000),
    data: [{ b64_json: PNG_1X1_BASE64 }],
    // Vendor B reports token usage for images; the gateway ignores it for vendor D (charge from the catalog).
    usage: {
      input_tokens: input,
      output_tokens: output,
      total_tokens: input + output,
      input_tokens_details: { text_tokens: tags.usage.input ?? textTokens, image_tokens: tags.usage.input === undefined ? imageTokens : 0 },
    },
  });
}

export function handleImageGeneration(ctx: Ctx): void {
  const body = ctx.body;
  if (!isObj(body)) throw new VendorError(400, 'We could not parse the JSON body of your request.');
  if (typeof body.model !== 'string' || body.model === '') throw new VendorError(400, "Missing required parameter: 'model'.", 'model');
  if (typeof body.prompt !== 'string' || body.prompt === '') throw new VendorError(400, "Missing required parameter: 'prompt'.", 'prompt');
  if (body.n !== undefined && (typeof body.n !== 'number' || !Number.isInteger(body.n) || body.n < 1)) {
    throw new VendorError(400, "Invalid 'n': expected a whole number of at least 1.", 'n');
  }
  imageAnswer(ctx, body.prompt, body.quality, 0);
}

export function handleImageEdit(ctx: Ctx): void {
  const body = ctx.body as MultipartBody | undefined;
  if (!body || !isObj(body) || !isObj(body.fields)) {
    throw new VendorError(400, 'Invalid content type: image edits take multipart/form-data.');
  }
  const { fields, files } = body;
  if (!fields.model) throw new VendorError(400, "Missing required parameter: 'model'.", 'model');
  if (!fields.prompt) throw new VendorError(400, "Missing required parameter: 'prompt'.", 'prompt');
  const images = files.filter((f) => f.name === 'image' || f.name === 'image[]');
  if (images.length === 0) throw new VendorError(400, "Missing required parameter: 'image'.", 'image');
  imageAnswer(ctx, fields.prompt, fields.quality, images.length);
}

// ---------- speech ----------

const AUDIO_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  pcm: 'audio/pcm',
};

function fakeAudio(format: string, chars: number): Buffer {
  const frames = Math.max(1, Math.ceil(chars / 50));
  switch (format) {
    case 'wav': {
      const data = Buffer.alloc(400 * frames);
      const h = Buffer.alloc(44);
      h.write('RIFF', 0);
      h.writeUInt32LE(36 + data.length, 4);
      h.write('WAVE', 8);
      h.write('fmt ', 12);
      h.writeUInt32LE(16, 16);
      h.writeUInt16LE(1, 20); // PCM
      h.writeUInt16LE(1, 22); // mono
      h.writeUInt32LE(24000, 24);
      h.writeUInt32LE(48000, 28);
      h.writeUInt16LE(2, 32);
      h.writeUInt16LE(16, 34);
      h.write('data', 36);
      h.writeUInt32LE(data.length, 40);
      return Buffer.concat([h, data]);
    }
    case 'pcm':
      return Buffer.alloc(400 * frames);
    case 'opus':
      return Buffer.concat([Buffer.from('OggS'), Buffer.alloc(300 * frames - 4)]);
    case 'aac':
      return Buffer.concat(Array.from({ length: frames }, () => Buffer.concat([Buffer.from([0xff, 0xf1, 0x50, 0x80]), Buffer.alloc(296)])));
    case 'flac':
      return Buffer.concat([Buffer.from('fLaC'), Buffer.alloc(300 * frames - 4)]);
    default: {
      // MPEG-1 Layer III, 128 kbit/s, 44.1 kHz: 417-byte frames.
      const frame = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(413)]);
      return Buffer.concat(Array.from({ length: frames }, () => frame));
    }
  }
}

export function handleSpeech(ctx: Ctx): void {
  const body = ctx.body;
  if (!isObj(body)) throw new VendorError(400, 'We could not parse the JSON body of your request.');
  if (typeof body.model !== 'string' || body.model === '') throw new VendorError(400, "Missing required parameter: 'model'.", 'model');
  if (typeof body.input !== 'string' || body.input === '') throw new VendorError(400, "Missing required parameter: 'input'.", 'input');
  if (typeof body.voice !== 'string' && !isObj(body.voice)) throw new VendorError(400, "Missing required parameter: 'voice'.", 'voice');
  const format = typeof body.response_format === 'string' ? body.response_format : 'mp3';
  const type = AUDIO_TYPES[format];
  if (!type) throw new VendorError(400, `Invalid value for 'response_format': '${format}'.`, 'response_format');
  const bytes = fakeAudio(format, body.input.length);
  ctx.res.writeHead(200, { 'content-type': type, 'content-length': bytes.length });
  ctx.res.end(bytes);
}

// ---------- embeddings ----------

function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** A deterministic unit vector for a text. */
function vectorFor(text: string, dims: number): number[] {
  let x = fnv(text) || 1;
  const v: number[] = [];
  for (let i = 0; i < dims; i++) {
    // xorshift32
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    v.push((x / 0xffffffff) * 2 - 1);
  }
  const norm = Math.sqrt(v.reduce((s, a) => s + a * a, 0)) || 1;
  return v.map((a) => Math.fround(a / norm));
}

/** The longest vector the vendor's largest embedding model returns. */
const MAX_DIMENSIONS = 3072;

export function handleEmbeddings(ctx: Ctx): void {
  const body = ctx.body;
  if (!isObj(body)) throw new VendorError(400, 'We could not parse the JSON body of your request.');
  if (typeof body.model !== 'string' || body.model === '') throw new VendorError(400, "Missing required parameter: 'model'.", 'model');
  const raw = body.input;
  let inputs: (string | number[])[];
  if (typeof raw === 'string') inputs = [raw];
  else if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'number')) inputs = [raw as number[]];
  else if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'string' || Array.isArray(x))) {
    inputs = raw as (string | number[])[];
  } else throw new VendorError(400, "Invalid 'input': expected a non-empty string or array.", 'input');
  const dims = body.dimensions === undefined || body.dimensions === null ? 8 : body.dimensions;
  if (typeof dims !== 'number' || !Number.isInteger(dims) || dims < 1 || dims > MAX_DIMENSIONS) {
    throw new VendorError(400, `Invalid 'dimensions': expected an integer from 1 to ${MAX_DIMENSIONS}.`, 'dimensions');
  }
  let tokens = 0;
  let tagText = '';
  const data = inputs.map((inp, index) => {
    const text = typeof inp === 'string' ? inp : inp.join(',');
    tokens += typeof inp === 'string' ? countTokens(inp) : inp.length;
    tagText += ` ${text}`;
    const vec = vectorFor(text, dims);
    const embedding = body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vec).buffer).toString('base64') : vec;
    return { object: 'embedding', index, embedding };
  });
  const override = parseTags(tagText).usage.input;
  const promptTokens = override ?? tokens;
  sendJson(ctx.res, 200, {
    object: 'list',
    data,
    model: body.model,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  });
}

// ---------- moderations ----------

const CATEGORIES = [
  'harassment',
  'harassment/threatening',
  'hate',
  'hate/threatening',
  'illicit',
  'illicit/violent',
  'self-harm',
  'self-harm/intent',
  'self-harm/instructions',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
];

function moderationResult(text: string, types: string[]): Obj {
  const flagged = text.includes('[[sim:flag]]');
  const categories: Record<string, boolean> = {};
  const scores: Record<string, number> = {};
  const applied: Record<string, string[]> = {};
  for (const c of CATEGORIES) {
    const hit = flagged && c === 'violence';
    categories[c] = hit;
    scores[c] = hit ? 0.98 : 0.0001;
    applied[c] = c.startsWith('self-harm') || c.startsWith('violence') || c === 'sexual' ? types : types.filter((t) => t === 'text');
  }
  return { flagged, categories, category_scores: scores, category_applied_input_types: applied };
}

export function handleModerations(ctx: Ctx): void {
  const body = ctx.body;
  if (!isObj(body)) throw new VendorError(400, 'We could not parse the JSON body of your request.');
  const model = typeof body.model === 'string' ? body.model : 'omni-moderation-latest';
  const raw = body.input;
  let results: Obj[];
  if (typeof raw === 'string') results = [moderationResult(raw, ['text'])];
  else if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'string')) {
    results = (raw as string[]).map((s) => moderationResult(s, ['text']));
  } else if (Array.isArray(raw) && raw.length > 0 && raw.every(isObj)) {
    const parts = raw as Obj[];
    const text = parts
      .filter((p) => p.type === 'text')
      .map((p) => String(p.text ?? ''))
      .join('\n');
    const types = [...new Set(parts.map((p) => (p.type === 'image_url' ? 'image' : 'text')))];
    results = [moderationResult(text, types)];
  } else throw new VendorError(400, "Invalid 'input': expected a string, an array of strings, or an array of parts.", 'input');
  sendJson(ctx.res, 200, { id: ctx.state.nextId('modr-sim'), model, results });
}

// ---------- vendor D video ----------

function uuidFor(n: number): string {
  return `5e7d0000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

export function handleVideoCreate(ctx: Ctx): void {
  const body = ctx.body;
  if (!isObj(body)) throw new VendorError(400, 'We could not parse the JSON body of your request.');
  if (typeof body.model !== 'string' || body.model === '') throw new VendorError(400, "Missing required parameter: 'model'.", 'model');
  if (typeof body.prompt !== 'string' || body.prompt === '') throw new VendorError(400, "Missing required parameter: 'prompt'.", 'prompt');
  // `duration` is the client's `seconds` exactly as sent, as vendor D's API takes it: a number, or a string such as "4".
  const duration = typeof body.duration === 'string' && /^\d+$/.test(body.duration) ? Number(body.duration) : body.duration;
  if (duration !== undefined && (typeof duration !== 'number' || duration <= 0)) {
    throw new VendorError(400, "Invalid 'duration': expected a positive number of seconds.", 'duration');
  }
  const id = uuidFor(ctx.state.counter());
  ctx.state.jobs.set(id, {
    id,
    route: ctx.route,
    createdAt: Date.now(),
    model: body.model,
    prompt: body.prompt,
    duration: typeof duration === 'number' ? duration : 4,
    tags: parseTags(body.prompt),
  });
  sendJson(ctx.res, 200, { request_id: id });
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** Job state from elapsed time: pending for one step, in_progress for two, then the outcome. */
export function handleVideoGet(ctx: Ctx, id: string): void {
  const job = ctx.state.jobs.get(id);
  if (!job) throw new VendorError(404, `No video request with id '${id}'.`);
  const step = Math.max(1, ctx.state.videoStepMs);
  const elapsed = Date.now() - job.createdAt;
  const stage = Math.floor(elapsed / step);
  const t = job.tags;
  if (stage < 1) return sendJson(ctx.res, 200, { status: 'pending' });
  if (t.inputModerated) {
    return sendJson(ctx.res, 200, {
      status: 'failed',
      error: { code: 'input_moderated', message: 'The prompt was blocked by the safety check (simulated).' },
      usage: { cost_usd: t.inputModerated.cost },
    });
  }
  const progress = Math.min(99, Math.max(1, Math.floor((100 * (elapsed - step)) / (2 * step))));
  if (t.never) return sendJson(ctx.res, 200, { status: 'in_progress', progress: Math.min(progress, 95) });
  if (stage < 3) return sendJson(ctx.res, 200, { status: 'in_progress', progress });
  if (t.fail) {
    return sendJson(ctx.res, 200, {
      status: 'failed',
      error: { code: 'internal_error', message: 'The video could not be generated (simulated).' },
    });
  }
  if (t.outputModerated) {
    return sendJson(ctx.res, 200, {
      status: 'failed',
      error: { code: 'output_moderated', message: 'The generated video was filtered by the safety check (simulated).' },
      usage: { cost_usd: 0 },
    });
  }
  sendJson(ctx.res, 200, {
    status: 'done',
    progress: 100,
    video: { url: videoUrl(ctx.state.baseUrl, job.route, id), duration: job.duration },
    usage: { cost_usd: round6(t.cost ?? 0.01 * job.duration) },
  });
}

function videoUrl(baseUrl: string, route: string, id: string): string {
  return `${baseUrl}/r/${encodeURIComponent(route)}/files/videos/${id}.mp4`;
}

/** A minimal MP4: an `ftyp` box and a small `mdat`. */
export function fakeMp4(): Buffer {
  const ftyp = Buffer.alloc(24);
  ftyp.writeUInt32BE(24, 0);
  ftyp.write('ftyp', 4);
  ftyp.write('isom', 8);
  ftyp.writeUInt32BE(512, 12);
  ftyp.write('isommp41', 16);
  const mdat = Buffer.alloc(256);
  mdat.writeUInt32BE(256, 0);
  mdat.write('mdat', 4);
  return Buffer.concat([ftyp, mdat]);
}

export function handleVideoFile(ctx: Ctx, id: string): void {
  const job = ctx.state.jobs.get(id);
  if (!job) return sendError(ctx.res, 'b', 404, `No video file '${id}'.`);
  if (job.tags.undeliverable) return sendError(ctx.res, 'b', 500, 'The video file is unavailable (simulated).');
  const bytes = fakeMp4();
  ctx.res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': bytes.length });
  ctx.res.end(bytes);
}
