// cap-output: for a vendor whose servers give more output than the model's max_output unless told
// (config/billing.yaml reservation.output_cap_written), the body carries an output limit no larger than it.
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../engine/core/types.ts';
import { makeCall, run } from './helpers.ts';

const CHAT = { write: 'max_tokens', fields: ['max_completion_tokens', 'max_tokens'] };

const capped = (body: JsonObject, outputCap: typeof CHAT | undefined, maxOutput = 16_384) => {
  const call = makeCall(body);
  const model = { ...call.model, max_output: maxOutput };
  return run(['cap-output'], { ...call, model, settings: { ...call.settings, ...(outputCap ? { outputCap } : {}) } }).body;
};

describe('cap-output', () => {
  it('writes the model max_output into a body with no output limit (null counts as none)', () => {
    expect(capped({ messages: [] }, CHAT).max_tokens).toBe(16_384);
    expect(capped({ max_tokens: null }, CHAT).max_tokens).toBe(16_384);
  });

  it('lowers every limit sent above max_output to it, leaves one below as sent, writes no other field', () => {
    expect(capped({ max_tokens: 100_000 }, CHAT)).toEqual({ max_tokens: 16_384 });
    expect(capped({ max_completion_tokens: 100_000, max_tokens: 10 }, CHAT)).toEqual({ max_completion_tokens: 16_384, max_tokens: 10 });
    expect(capped({ max_completion_tokens: 500 }, CHAT)).toEqual({ max_completion_tokens: 500 });
  });

  it('a value that is not a limit is left for the reservation to refuse by name', () => {
    expect(capped({ max_tokens: '100000' }, CHAT)).toEqual({ max_tokens: '100000' });
    expect(capped({ max_tokens: -5 }, CHAT)).toEqual({ max_tokens: -5 });
  });

  it('changes nothing for a vendor billing.yaml does not list', () => {
    expect(capped({ max_tokens: 100_000 }, undefined)).toEqual({ max_tokens: 100_000 });
    expect(capped({ messages: [] }, undefined)).toEqual({ messages: [] });
  });
});
