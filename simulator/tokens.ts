// The simulator's "real" token counts: a published tokenizer (gpt-tokenizer's o200k_base), a different rule
// from the gateway's estimate for every vendor but B, so a test that breaks a stream measures how far the
// estimate is from what a vendor would have billed. Long texts are counted in slices: a tokenizer's merges on
// one enormous word (a megabyte of `x`) take far longer than a simulated vendor may, and a slice edge only
// ever adds a token. The tables load at the first count: the simulator is bundled into the gateway, whose
// memory at start should not carry them when it talks to real vendors.
import { createRequire } from 'node:module';

let o200k: ((text: string) => number) | undefined;
const o200kTokens = (text: string): number => {
  o200k ??= (createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as { countTokens: (text: string) => number }).countTokens;
  return o200k(text);
};

const SLICE_CHARS = 8 * 1024;

export function countTokens(text: string): number {
  let tokens = 0;
  let at = 0;
  while (at < text.length) {
    let end = Math.min(text.length, at + SLICE_CHARS);
    // Never split a surrogate pair across slices.
    if (end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end--;
    tokens += o200kTokens(text.slice(at, end));
    at = end;
  }
  return tokens;
}
