// Where a body carries the prompt, and what in it makes a vendor pull content in, is each wire format's own
// declaration (Protocol `prompt`, transforms/protocols/<format>/): a format of a test's own, whose fields no shipped
// format names, frames turns in the hold, bounds it at the context window where it points at content, and counts
// in the context window check and notes its cache breakpoints once it takes its place beside the others, and not before.
import { describe, expect, it } from 'vitest';
import { refuseInputPastContext } from '../../engine/calls/context-window.ts';
import { measureBody } from '../../engine/catalog/body-measure.ts';
import type { DoorConfig } from '../../engine/catalog/config.ts';
import { loadSnapshot, type Snapshot } from '../../engine/catalog/runtime.ts';
import { textBounds } from '../../engine/catalog/text-bounds.ts';
import type { Call } from '../../engine/core/call.ts';
import type { PromptFields } from '../../engine/core/prompt-fields.ts';
import { isJsonObject, type JsonObject } from '../../engine/core/types.ts';
import { protocols } from '../../transforms/protocols/index.ts';
import { withAndWithout as withToy } from '../helpers/toy-format.ts';

const snap = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);
const model = snap.catalog.models.get('b-6')!;
const billing = snap.config.billing;

const TOY: PromptFields = {
  turns: ['contents'],
  system_prompt: ['system_instruction'],
  text_keys: ['says'],
  cache_mark: { key: 'cache_hint', hour: { field: 'keep', value: 'long' } },
  pulls: {
    part: (p) => p.type === 'file_data' && isJsonObject(p.file) && typeof p.file.uri === 'string',
    body: (b) => typeof b.cached_content === 'string' && b.cached_content !== '',
  },
};

/** `read()` with the toy format beside the shipped ones, and without it. */
const withAndWithout = <T>(read: () => T) => withToy('toy-prompt', { ...protocols.moderations!, prompt: TOY }, read);

const inputOf = (body: JsonObject) => withAndWithout(() => textBounds(model, { model: 'b-6', ...body }, billing, {}).inputTokens);

describe("a format's declaration decides where a body carries the prompt", () => {
  it('frames each of its turns, and its system prompt as one more', () => {
    const turn = { parts: [{ says: 'hello' }] };
    const input = inputOf({ contents: [turn, turn, turn], system_instruction: 'be brief' });
    expect(input.with - input.without).toBe(4 * billing.reservation.framing_per_message.b!);
  });

  it('holds the whole context window for a part or a field that pulls content in', () => {
    const file = inputOf({ contents: [{ parts: [{ type: 'file_data', file: { uri: 'gs://bucket/book.pdf' } }] }] });
    expect(file).toEqual({ with: model.context_window, without: expect.any(Number) });
    expect(file.without).toBeLessThan(1_000);
    const cached = inputOf({ contents: [], cached_content: 'cachedContents/1' });
    expect(cached.with).toBe(model.context_window);
    expect(cached.without).toBeLessThan(1_000);
    // Its conditions decide: a part with no URI points at nothing.
    expect(inputOf({ contents: [{ parts: [{ type: 'file_data', file: {} }] }] }).with).toBeLessThan(1_000);
  });

  it("counts the words under its text keys in the context window's check", () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const call = { model: { id: 'b-6', vendor: 'b', context_window: 50 }, body: { contents: [{ parts: [{ says: words }] }] } };
    const vendors = { config: { vendors: { b: { tokens_at_least_words: true } } } } as unknown as Snapshot;
    const refused = withAndWithout(() => {
      try {
        refuseInputPastContext({ billing: 'tokens' } as DoorConfig, call as unknown as Call, vendors);
        return null;
      } catch (e) {
        return (e as { status: number }).status;
      }
    });
    expect(refused).toEqual({ with: 400, without: null });
  });

  it('notes its cache breakpoints, and one kept an hour, wherever they sit', () => {
    const marks = (body: JsonObject) =>
      withAndWithout(() => {
        const m = measureBody(body);
        return [m.marksCache, m.marksCacheHour];
      });
    const deep = { contents: [{ parts: [{ says: 'hi', cache_hint: { keep: 'long' } }] }] };
    expect(marks(deep)).toEqual({ with: [true, true], without: [false, false] });
    expect(marks({ contents: [], cache_hint: {} })).toEqual({ with: [true, false], without: [false, false] });
    // A null mark is none, as the vendor reads it.
    expect(marks({ contents: [], cache_hint: null }).with).toEqual([false, false]);
  });
});
