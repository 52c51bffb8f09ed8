// Forms read into a JSON body plus the files kept aside, and the vendor's multipart body built again from a call.
// A file stands in the body as `{filename, content_type, bytes}` so requires, refusals and rules see it like any
// other parameter, while its bytes are buffered once beside the body.
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { DoorConfig } from '../catalog/config.ts';
import type { Call, UploadedFile } from '../core/call.ts';
import { errors, GatewayError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/types.ts';
import { unpairedSurrogateRefusal } from './unpaired-surrogates.ts';

interface MultipartForm {
  body: JsonObject;
  files: Record<string, UploadedFile>;
}

/** What one door's form may hold. Only fileLimitBytes is required; the rest has defaults for a door's form. */
export interface FormRules {
  /** Each file is held up to this size; a larger one is answered 413. */
  fileLimitBytes: number;
  /** Fields that come as files (default: the door's `files`). */
  files?: readonly string[];
  /**
   * Fields among `files` that may instead come as a plain value, or as `name[key]` values gathered into an
   * object (an image's URL instead of the image, as the vendor B SDK sends `input_reference[image_url]`).
   */
  filesOrValues?: readonly string[];
  /** Largest plain value (default 1 MB); a larger one is answered 413. */
  valueLimitBytes?: number;
  /** Most parts in one form (default 100), and most files; beyond them the form is answered 413. */
  maxParts?: number;
  maxFiles?: number;
}

/** Form values that the JSON doors take as numbers (the refusals compare numbers). */
const NUMBER_VALUES = new Set(['n', 'partial_images', 'output_compression']);

/** Options for registering @fastify/multipart on a multipart door's scope. */
export const MULTIPART_PLUGIN_OPTIONS = { throwFileSizeLimit: false } as const;

const MAX_PARTS = 100;
const MAX_VALUE_BYTES = 1024 * 1024;

/**
 * Reads the whole form. Each file is held up to the file limit; a larger one is read to the end and dropped,
 * then answered 413 (the client sees the answer rather than a cut connection). Files under names the door does
 * not take as files, values under names it takes only as files, and a field sent twice are 400 — except names
 * the door refuses outright (for example `mask`), which reach prepareCall and get the door's own refusal
 * whether sent as a value or a file.
 */
export async function readMultipartForm(req: FastifyRequest, door: DoorConfig, rules: FormRules): Promise<MultipartForm> {
  if (!req.isMultipart()) throw errors.invalidRequest(`${door.path} takes a multipart/form-data body.`);
  const fileNames = rules.files ?? door.files ?? [];
  const valuesToo = rules.filesOrValues ?? [];
  const valueLimit = rules.valueLimitBytes ?? MAX_VALUE_BYTES;
  const body: JsonObject = {};
  const files: Record<string, UploadedFile> = {};
  /** What filled each body field so far: a file, a plain value, or `name[key]` values. */
  const filled = new Map<string, 'file' | 'value' | 'object'>();
  const seenParts = new Set<string>();
  let tooLarge: string | undefined;
  let misplaced: GatewayError | undefined;
  const refusedOutright = (name: string) =>
    door.refuse.some((r) => !r.vendors && 'present' in r.when && r.when.param === name && r.when.present);

  try {
    // The plugin is registered with throwFileSizeLimit: false (MULTIPART_PLUGIN_OPTIONS): a file past the limit
    // is truncated and drained, not an error mid-stream.
    const limits = { fileSize: rules.fileLimitBytes, fieldSize: valueLimit, parts: rules.maxParts ?? MAX_PARTS, files: rules.maxFiles };
    for await (const part of req.parts({ limits })) {
      const nested = part.type === 'field' ? /^(\w+)\[(\w+)\]$/.exec(part.fieldname) : null;
      // The pattern's two groups are not optional: a match has both.
      const name = nested && valuesToo.includes(nested[1]!) ? nested[1]! : part.fieldname;
      const kind = part.type === 'file' ? 'file' : name !== part.fieldname ? 'object' : 'value';
      const before = filled.get(name);
      // A field is filled once: by a file, by a value, or by `name[key]` values, each key once.
      const gatheringMore = before === 'object' && kind === 'object' && !seenParts.has(part.fieldname);
      const repeated = before !== undefined && !gatheringMore;
      filled.set(name, kind);
      seenParts.add(part.fieldname);
      const sentTwice = () => errors.invalidRequest(`${name} was sent more than once; send one ${name}.`, name);
      if (part.type === 'file') {
        // Only a file the door takes, the first under its name, is held; every other one is read and dropped.
        const keep = fileNames.includes(name) && !repeated && !misplaced && !tooLarge;
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of part.file) {
          size += (chunk as Buffer).length;
          if (keep && !part.file.truncated) chunks.push(chunk as Buffer);
        }
        if (part.file.truncated) {
          tooLarge ??= `The ${name} file is larger than ${formatBytes(rules.fileLimitBytes)}. Send a smaller file.`;
          continue;
        }
        if (!fileNames.includes(name) && !refusedOutright(name)) {
          misplaced ??= errors.invalidRequest(`${name} must be sent as a form value, not as a file.`, name);
          continue;
        }
        if (repeated) misplaced ??= sentTwice();
        // An empty file would be held for and sent, and the vendor's refusal of it would read as the gateway's fault.
        if (size === 0 && fileNames.includes(name))
          misplaced ??= errors.invalidRequest(`The ${name} file is empty. Send it with its content.`, name);
        const data = Buffer.concat(chunks);
        const contentType = part.mimetype || 'application/octet-stream';
        const filename = part.filename || name;
        if (keep) files[name] = { filename, contentType, data };
        body[name] = { filename, content_type: contentType, bytes: size };
      } else {
        if (part.valueTruncated) {
          tooLarge ??= `The ${name} value is larger than ${formatBytes(valueLimit)}.`;
          continue;
        }
        if (fileNames.includes(name) && !valuesToo.includes(name)) {
          misplaced ??= errors.invalidRequest(`${name} must be sent as a file, not as a form value.`, name);
          continue;
        }
        if (repeated) misplaced ??= sentTwice();
        if (nested && kind === 'object') {
          const gathered = (before === 'object' ? body[name] : {}) as JsonObject;
          gathered[nested[2]!] = formValue(part.fieldname, part.value);
          body[name] = gathered;
        } else {
          body[name] = formValue(name, part.value);
        }
      }
    }
  } catch (e) {
    throw formError(e);
  }
  if (tooLarge) throw errors.tooLarge(tooLarge);
  if (misplaced) throw misplaced;
  // A part sent as application/json arrives parsed, so a form can carry a lone surrogate as JSON does.
  const notText = unpairedSurrogateRefusal(body);
  if (notText) throw notText;
  return { body, files };
}

function formValue(name: string, raw: unknown): JsonValue {
  if (typeof raw !== 'string') return raw as JsonValue; // a part sent as application/json arrives parsed
  if (NUMBER_VALUES.has(name) && /^-?\d+$/.test(raw.trim())) return Number(raw.trim());
  return raw;
}

const formatBytes = (n: number) => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MB` : `${n} bytes`);

/**
 * The vendor's multipart body from the call: every body value as a form value (numbers and booleans as text,
 * objects as JSON), and every file of `call.files` under its name with its filename and content-type. Built once
 * per call, so each route of a fallback gets the same bytes.
 */
export function encodeMultipart(call: Call): { body: Buffer; contentType: string } {
  const boundary = `----gateway${randomBytes(12).toString('hex')}`;
  const chunks: Buffer[] = [];
  const files = call.files ?? {};
  for (const [name, value] of Object.entries(call.body)) {
    const file = files[name];
    if (file) {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${escapeQuoted(name)}"; filename="${escapeQuoted(file.filename)}"\r\n` +
            `Content-Type: ${file.contentType.replace(/[\r\n]/g, '')}\r\n\r\n`,
        ),
        file.data,
        Buffer.from('\r\n'),
      );
      continue;
    }
    if (value === null || value === undefined) continue;
    const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${escapeQuoted(name)}"\r\n\r\n${text}\r\n`));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Names and filenames in Content-Disposition, escaped as browsers do (WHATWG multipart/form-data). */
const escapeQuoted = (s: string) => s.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');

/** What went wrong while reading a form, as the client's error: 413 for size, else 400. */
function formError(e: unknown): GatewayError {
  if (e instanceof GatewayError) return e;
  const err = e as { statusCode?: number; message?: string };
  if (err.statusCode === 413) return errors.tooLarge(`The form is too large: ${err.message ?? 'too many parts'}.`);
  return errors.invalidRequest(`Malformed multipart/form-data body: ${err.message ?? 'unreadable'}.`);
}
