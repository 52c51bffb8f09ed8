// What an embeddings request may ask, checked before anything is held or sent: a vendor refuses the rest with a
// 400 of its own, after the gateway has taken a hold and spent a call on it. `input` is one text, a list of texts,
// token ids, or a list of token-id lists, never empty; `dimensions` a positive whole number.
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { bad, describe } from '../../util/json.ts';

/** The most entries one request may embed (vendor B's limit; the others' are not higher). */
const MAX_INPUTS = 2048;

const isTokenId = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isText = (v: unknown): boolean => typeof v === 'string' && v !== '';
const isTokenIds = (v: unknown): boolean => Array.isArray(v) && v.length > 0 && v.every(isTokenId);

const SHAPES = 'a non-empty string, an array of non-empty strings, an array of token ids, or an array of such arrays';

function checkInput(input: unknown): void {
  if (typeof input === 'string') {
    if (input === '') throw bad('input must not be empty.', 'input');
    return;
  }
  if (!Array.isArray(input) || input.length === 0) throw bad(`input must be ${SHAPES}; got ${describe(input)}.`, 'input');
  if (input.length > MAX_INPUTS) throw bad(`input holds ${input.length} entries; at most ${MAX_INPUTS} are embedded in one call.`, 'input');
  const fits = input.every(isText) || input.every(isTokenId) || input.every(isTokenIds);
  if (!fits) throw bad(`input must be ${SHAPES}; an entry is not.`, 'input');
}

const run: RequestTransform = (call) => {
  checkInput(call.body.input);
  const dimensions = call.body.dimensions;
  if (dimensions !== undefined && dimensions !== null && !(Number.isInteger(dimensions) && (dimensions as number) >= 1))
    throw bad(`dimensions must be a positive whole number (1 or more); got ${describe(dimensions)}.`, 'dimensions');
  return call;
};

/** The step as chains name it. */
export const embeddingInput: Step<RequestTransform> = { name: 'embedding-input', run };
