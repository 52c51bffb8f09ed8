// Token estimates for when a vendor left out its usage (a stream broken before the last event, an answer
// without a usage figure), so such a call is never settled at zero: text is counted by the vendor's own
// tokenizer where it is published, else by a per-script bound that errs above (token-count.ts). Erring above, each
// estimated count is held to the token bound the call's hold priced (`notes.heldTokens`), so an estimate never
// charges past the hold. The body is read for images as the call's format declares (its `settings.images`,
// transforms/protocols/<format>/).
import type { HeldTokens } from '../../engine/core/call.ts';
import { billedAsImage, type ImageReading, imagePartsOf } from '../../engine/core/image-parts.ts';
import { emptyUsage, type JsonObject, type JsonValue, type Usage, type VendorId } from '../../engine/core/types.ts';
import { countTextTokens } from './token-count.ts';

/** The tokens of a text the vendor produced or read. */
const estimateTextTokens = (text: string, vendor: VendorId | undefined): number => countTextTokens(text, vendor);

/**
 * The text a stream delivered so far, kept as the pieces that arrived: a call pays one push per piece, and
 * joining and counting happen only when an estimate is needed.
 */
export class StreamedText {
  private readonly pieces: string[] = [];

  add(piece: string): void {
    if (piece.length > 0) this.pieces.push(piece);
  }

  tokens(vendor: VendorId | undefined): number {
    return estimateTextTokens(this.pieces.join(''), vendor);
  }
}

/**
 * What one image costs the vendors, about: a picture of some 1.2 megapixels at 750 pixels per token. An
 * image's base64 (or its URL) is not text the vendor tokenizes, so it is counted as this instead.
 */
export const IMAGE_TOKENS_ESTIMATE = 1600;

/**
 * The input tokens of the whole body the vendor received: every part of it is input the vendor bills
 * (system, instructions, tool definitions, messages, parameters), so all of its text counts, keys included,
 * with a token for each member and item besides, and each image counts IMAGE_TOKENS_ESTIMATE, its payload left
 * out where `reading` (the call's, from its format) says content parts sit. Walked without recursion, whatever the depth.
 */
export function estimateInputTokens(body: JsonObject, vendor: VendorId | undefined, reading: ImageReading): number {
  const text: string[] = [];
  const imageParts = imagePartsOf(body, reading);
  let members = 0;
  let images = 0;
  const pending: JsonValue[] = [body];
  while (pending.length > 0) {
    const value = pending.pop()!;
    if (typeof value === 'string') text.push(value);
    else if (Array.isArray(value)) {
      members += value.length;
      for (const item of value) pending.push(item);
    } else if (value !== null && typeof value === 'object') {
      if (billedAsImage(value, reading.billed)) images++;
      if (imageParts.has(value)) continue;
      const entries = Object.entries(value);
      members += entries.length;
      for (const [k, child] of entries) {
        text.push(k);
        pending.push(child);
      }
    } else {
      text.push(String(value));
    }
  }
  // Pieces apart by a newline, so no two merge into a token they would not form in the vendor's prompt.
  return estimateTextTokens(text.join('\n'), vendor) + members + images * IMAGE_TOKENS_ESTIMATE;
}

/** The two counts an estimate supplies: the whole body as input, the answer's text as output. */
type TokenEstimate = Pick<Usage, 'input_tokens' | 'output_tokens'>;

/** A figure with nothing reported: both token counts unreadable, for `estimateUnreadable` to fill. */
export function unreportedUsage(): Usage {
  const usage = emptyUsage();
  usage.input_tokens = NaN;
  usage.output_tokens = NaN;
  return usage;
}

const unreadable = (n: unknown): boolean => typeof n === 'number' && Number.isNaN(n);

/**
 * A usage figure whose counts the reader could not read (NaN, see `count`), made chargeable. An unreadable
 * input-side count (input, cache read or write) means the prompt's split is unknown: the whole input is
 * estimated and billed at the input price, which is never below a cache read's. An unreadable output is
 * estimated from the answer's text, and so are an advisor's. Any other unreadable count is left out.
 * `estimate` is called only when something is unreadable. Each estimated count, an advisor's too, is at most
 * `held`'s (the call's hold in tokens; absent for a call held without token bounds, which keeps its estimate).
 */
export function estimateUnreadable(usage: Usage, estimate: () => TokenEstimate, held: HeldTokens | undefined): Usage {
  if (!anyUnreadable(usage)) return usage;
  const guess = withinHeld(estimate(), held);
  const out: Usage = { ...usage };
  if ([usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens].some(unreadable)) {
    Object.assign(out, { input_tokens: guess.input_tokens, cache_read_tokens: 0, cache_write_tokens: 0 });
  }
  if (unreadable(out.output_tokens)) out.output_tokens = guess.output_tokens;
  for (const [key, value] of Object.entries(out)) if (unreadable(value)) Object.assign(out, { [key]: 0 });
  if (usage.advisor) {
    out.advisor = usage.advisor.map((a) => ({
      model: a.model,
      input_tokens: unreadable(a.input_tokens) ? guess.input_tokens : a.input_tokens,
      output_tokens: unreadable(a.output_tokens) ? guess.output_tokens : a.output_tokens,
    }));
  }
  return out;
}

const withinHeld = (guess: TokenEstimate, held: HeldTokens | undefined): TokenEstimate =>
  held
    ? { input_tokens: Math.min(guess.input_tokens, held.input_tokens), output_tokens: Math.min(guess.output_tokens, held.output_tokens) }
    : guess;

/** Whether any count of the figure, or of its advisors', is unreadable. */
function anyUnreadable(usage: Usage): boolean {
  for (const key in usage) if (unreadable(usage[key as keyof Usage])) return true;
  return usage.advisor?.some((a) => unreadable(a.input_tokens) || unreadable(a.output_tokens)) ?? false;
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
  images: ImageReading,
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
