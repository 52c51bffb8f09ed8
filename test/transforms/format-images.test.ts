// The estimate charged when a vendor's usage cannot be read reads the body's images as the call's format declares
// (the call's `settings.images`): a part's payload is left out only where that format carries content parts.
import { describe, expect, it } from 'vitest';
import type { ImageParts, ImageReading } from '../../engine/core/image-parts.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import { estimateAnswerUsage, IMAGE_TOKENS_ESTIMATE } from '../../transforms/util/estimate.ts';
import { streamTranslators } from '../helpers/chain-steps.ts';
import { makeCall } from './helpers.ts';

describe("the estimate follows the body's format", () => {
  const long = ' hello'.repeat(5_000);
  const toy: ImageParts = { types: ['picture'], lists: ['turns'], item_parts: ['pieces'] };
  const reading: ImageReading = { parts: [toy], billed: [toy] };

  it('counts a declared part as an image, its payload left out, and its bytes where the format declares no part', () => {
    const declared: JsonObject = { turns: [{ pieces: [{ type: 'picture', data: long }] }] };
    const input = estimateAnswerUsage(declared, {}, 'b', reading).input_tokens;
    expect(input).toBeGreaterThanOrEqual(IMAGE_TOKENS_ESTIMATE);
    expect(input).toBeLessThan(IMAGE_TOKENS_ESTIMATE + 100);
    const undeclared: JsonObject = { turns: [{ other: [{ type: 'picture', data: long }] }] };
    expect(estimateAnswerUsage(undeclared, {}, 'b', reading).input_tokens).toBeGreaterThan(IMAGE_TOKENS_ESTIMATE + 5_000);
  });
});

describe("a stream's estimate reads the body as its call says", () => {
  it("leaves out a part's payload where the call's format declares content parts", () => {
    const long = ' hello'.repeat(5_000);
    const toy: ImageParts = { types: ['picture'], lists: ['turns'], item_parts: ['pieces'] };
    const body: JsonObject = { model: 'b-5', stream: true, turns: [{ pieces: [{ type: 'picture', data: long }] }] };
    const call = makeCall(body, { model: { vendor: 'b' } });
    call.settings.images = { parts: [toy], billed: [toy] };
    const t = streamTranslators['relay-hiding-injected-usage']!(call);
    expect(t.usage().input_tokens).toBeLessThan(IMAGE_TOKENS_ESTIMATE + 100);
    call.settings.images = { parts: [], billed: [] };
    expect(streamTranslators['relay-hiding-injected-usage']!(call).usage().input_tokens).toBeGreaterThan(5_000);
  });
});
