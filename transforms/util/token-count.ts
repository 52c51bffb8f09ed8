// Counting a text's tokens when a vendor left out its usage: exactly, with the vendor's own tokenizer where a
// maintained library publishes it (vendor B's o200k_base, in gpt-tokenizer), else with the per-script bound
// (token-bound.ts), never below that published tokenizer's count: the bound is calibrated on prose, and text
// made to look unlike prose (random syllables or letters a client asks a model to write) must not pay less.
// Only estimates call this, never a call that has usage, so the tables (about 60 MB of a process's memory)
// load at the first estimate rather than at start: a gateway whose vendors report usage never holds them. The
// load is synchronous (a second at most, once per process) because an estimate is computed where it is used.
import { createRequire } from 'node:module';
import type { VendorId } from '../../engine/core/types.ts';
import { boundTokens } from './token-bound.ts';

type Counter = (text: string) => number;
let o200k: Counter | undefined;
const o200kTokens: Counter = (text) => {
  o200k ??= (createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as { countTokens: Counter }).countTokens;
  return o200k(text);
};

/** Vendors whose tokenizer is published in a maintained library: their text is counted exactly. */
const PUBLISHED_TOKENIZERS: Partial<Record<VendorId, (text: string) => number>> = { b: o200kTokens };

/**
 * Past this length even a published tokenizer's vendor is counted by the bound: tokenizing is synchronous and a
 * long answer would stall every other call on the process, and the bound never counts fewer than the tokenizer.
 */
export const EXACT_COUNT_MAX_CHARS = 64 * 1024;

/** The tokens of `text` for `vendor`: exact where its tokenizer is published, else an upper bound. */
export function countTextTokens(text: string, vendor: VendorId | undefined): number {
  if (text.length === 0) return 0;
  if (text.length > EXACT_COUNT_MAX_CHARS) return boundTokens(text);
  const exact = vendor ? PUBLISHED_TOKENIZERS[vendor] : undefined;
  return exact ? exact(text) : Math.max(boundTokens(text), o200kTokens(text));
}
