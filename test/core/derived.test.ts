// Values the call path derives from configuration are made once per config object (a reload's new objects
// are derived again) and once per configured text, with the text cache bounded.
import { describe, expect, it } from 'vitest';
import { derivedFrom, derivedFromText } from '../../engine/core/derived.ts';

describe('derivedFrom', () => {
  it('derives once per object, and again for a new object such as a reload makes', () => {
    let runs = 0;
    const fields = derivedFrom((limits: { output: string[] }) => {
      runs++;
      return new Set(limits.output);
    });
    const loaded = { output: ['max_tokens'] };
    expect(fields(loaded).has('max_tokens')).toBe(true);
    expect(fields(loaded)).toBe(fields(loaded));
    expect(runs).toBe(1);
    const reloaded = { output: ['max_completion_tokens'] };
    expect(fields(reloaded).has('max_completion_tokens')).toBe(true);
    expect(fields(reloaded).has('max_tokens')).toBe(false);
    expect(runs).toBe(2);
  });
});

describe('derivedFromText', () => {
  it('derives once per text and starts over past its bound', () => {
    let runs = 0;
    const pattern = derivedFromText((source) => {
      runs++;
      return new RegExp(source, 'i');
    }, 2);
    expect(pattern('^a').test('ABC')).toBe(true);
    pattern('^a');
    expect(runs).toBe(1);
    pattern('^b');
    pattern('^c'); // the third text: the cache starts over with it
    pattern('^c');
    expect(runs).toBe(3);
    pattern('^a');
    expect(runs).toBe(4);
  });
});
