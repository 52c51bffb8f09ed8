// Issue 40: a prompt past the model's context window is refused before anything is held, by a count that is a
// lower bound (the prompt's words) for vendors whose tokenizer never joins words: so a call the vendor would
// take is never refused. The property below checks the bound against vendor B's published tokenizer.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refuseInputPastContext } from '../../engine/calls/context-window.ts';
import type { DoorConfig } from '../../engine/catalog/config.ts';
import type { Snapshot } from '../../engine/catalog/runtime.ts';
import type { Call } from '../../engine/core/call.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import { countTokens } from '../../simulator/tokens.ts';

const TOKENS_DOOR = { billing: 'tokens' } as DoorConfig;
const snapWith = (flag: boolean) => ({ config: { vendors: { b: { tokens_at_least_words: flag } } } }) as unknown as Snapshot;
const callOf = (body: JsonObject, window: number | null) =>
  ({ model: { id: 'b-test', vendor: 'b', context_window: window }, body }) as unknown as Call;
const refused = (body: JsonObject, window: number | null, flag = true, door = TOKENS_DOOR) => {
  try {
    refuseInputPastContext(door, callOf(body, window), snapWith(flag));
    return null;
  } catch (e) {
    return e as { status: number; message: string };
  }
};

describe('the context window check', () => {
  const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

  it('refuses one word past the window, in the text the model reads, with the counts; takes the window itself', () => {
    const body = { messages: [{ role: 'user', content: [{ type: 'text', text: words(60) }] }], system: words(40) };
    expect(refused(body, 100)).toBeNull();
    const e = refused(body, 99);
    expect(e?.status).toBe(400);
    expect(e?.message).toContain('at least 100 tokens');
    expect(e?.message).toContain('at most 99');
    // Responses input (string or items) and instructions count too.
    expect(refused({ input: words(50), instructions: words(10) }, 59)?.status).toBe(400);
    expect(refused({ input: [{ role: 'user', content: [{ type: 'input_text', text: words(60) }] }] }, 59)?.status).toBe(400);
  });

  it('counts no roles, types, ids or settings, and no word without a letter', () => {
    const body = {
      messages: [{ role: 'user', name: 'a b c d', content: '1 2 3 ... --- w' }],
      metadata: { note: words(100) },
      user: words(100),
    };
    expect(refused(body, 1)).toBeNull();
  });

  it('checks nothing for a vendor not marked tokens_at_least_words, a model without a window, or a door not billed by tokens', () => {
    const body = { messages: [{ role: 'user', content: words(200) }] };
    expect(refused(body, 10, false)).toBeNull();
    expect(refused(body, null)).toBeNull();
    expect(refused(body, 10, true, { billing: 'free' } as DoorConfig)).toBeNull();
  });

  it("never counts more than vendor B's tokenizer does, whatever the text", () => {
    const piece = fc.constantFrom(
      ' ',
      '  ',
      '\n',
      '\t',
      '\u00a0',
      '-',
      '!',
      '/',
      "'s",
      '123',
      'a',
      'Hello',
      'wORLD',
      '한국어',
      '漢字',
      'é',
      '😀',
      'x'.repeat(40),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), (pieces) => {
        const text = pieces.join('');
        expect(refused({ messages: [{ role: 'user', content: text }] }, Math.max(1, countTokens(text)))).toBeNull();
      }),
      { numRuns: 500 },
    );
  });
});
