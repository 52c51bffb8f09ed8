// A prompt longer than the model's context window is refused before anything is held, rather than tie up the
// wallet for a call the vendor refuses anyway. The count is a lower bound (words), used only for vendors whose
// tokenizer never joins two words in one token (`tokens_at_least_words`), so no call the vendor takes is refused.
import type { DoorConfig } from '../catalog/config.ts';
import type { Snapshot } from '../catalog/runtime.ts';
import { everyFormatsPrompt } from '../catalog/wire-format.ts';
import type { Call } from '../core/call.ts';
import { errors } from '../core/errors.ts';
import type { JsonValue } from '../core/types.ts';

/** Throws a 400 when the call's prompt holds more words than its model's context window has tokens. */
export function refuseInputPastContext(door: DoorConfig, call: Call, snap: Snapshot): void {
  const window = call.model.context_window;
  if (door.billing !== 'tokens' || !window || !snap.config.vendors[call.model.vendor]?.tokens_at_least_words) return;
  // Where the prompt's text sits, and which keys under it are read, as every format declares (Protocol `prompt`),
  // as the hold reads them: a vendor may read a field its own format does not name.
  const { fields, textKeys } = everyFormatsPrompt();
  let words = 0;
  for (const field of fields) words += promptWords(call.body[field], field, textKeys);
  if (words <= window) return;
  const n = (x: number) => x.toLocaleString('en-US');
  throw errors.invalidRequest(
    `The input is longer than the context window of ${call.model.id}: it has at least ${n(words)} tokens (one per word) ` +
      `and the model takes at most ${n(window)}. Shorten it, or use a model with a larger context window. Nothing was held or charged.`,
  );
}

/**
 * The words of every text the model reads under `value`, a string under one of `textKeys`; strings under other
 * keys (roles, types, ids, data) are not counted.
 */
function promptWords(value: JsonValue | undefined, key: string, textKeys: ReadonlySet<string>): number {
  if (typeof value === 'string') return textKeys.has(key) ? wordsIn(value) : 0;
  let words = 0;
  if (Array.isArray(value)) for (const item of value) words += promptWords(item, key, textKeys);
  else if (value && typeof value === 'object') for (const k in value) words += promptWords(value[k], k, textKeys);
  return words;
}

const OTHER_SPACE = /\s/;
const OTHER_LETTER = /\p{L}/u;

/**
 * Whitespace-separated words holding a letter. Such tokenizers split text into pieces that each hold at most one
 * unbroken run of letters, so every such word is at least one token; a word of symbols alone may share one.
 */
function wordsIn(text: string): number {
  let words = 0;
  let lettered = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || (c >= 9 && c <= 13) || (c > 127 && OTHER_SPACE.test(text[i]!))) {
      if (lettered) words++;
      lettered = false;
    } else if (!lettered && ((c | 32) >= 97 && (c | 32) <= 122 ? true : c > 127 && OTHER_LETTER.test(text[i]!))) {
      lettered = true;
    }
  }
  return lettered ? words + 1 : words;
}
