// Day and month boundaries in Korean standard time (UTC+9), from the instant alone. koreanDate remembers the
// last day it was asked for, so the answers must not depend on what was asked before.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  endOfKoreanDay,
  koreanDate,
  koreanMonth,
  nextKoreanMidnight,
  nextKoreanMonthStart,
  startOfKoreanDay,
} from '../../engine/core/clock.ts';

const uncached = (at: Date) => new Date(at.getTime() + 9 * 3600 * 1000).toISOString().slice(0, 10);

describe('the Korean calendar', () => {
  it('turns the day at 15:00 UTC, whichever side was asked first', () => {
    expect(koreanDate(new Date('2026-11-22T15:00:00.000Z'))).toBe('2026-11-23');
    expect(koreanDate(new Date('2026-11-22T14:59:59.999Z'))).toBe('2026-11-22');
    expect(koreanDate(new Date('2026-11-23T14:59:59.999Z'))).toBe('2026-11-23');
    expect(koreanDate(new Date('2026-11-23T15:00:00.000Z'))).toBe('2026-11-24');
    expect(koreanDate(new Date('2026-11-22T15:00:00.000Z'))).toBe('2026-11-23');
    expect(koreanDate(new Date('2026-11-21T15:00:00.000Z'))).toBe('2026-11-22');
    expect(koreanMonth(new Date('2026-11-30T15:00:00Z'))).toBe('2026-12');
  });

  it('agrees with the plain conversion over any sequence of instants', () => {
    const instant = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2100-01-01T00:00:00Z') });
    const nearby = fc.tuple(instant, fc.array(fc.integer({ min: -2 * 86_400_000, max: 2 * 86_400_000 }), { maxLength: 20 }));
    fc.assert(
      fc.property(nearby, ([start, steps]) => {
        let t = start;
        for (const step of [0, ...steps]) {
          t += step;
          const at = new Date(t);
          expect(koreanDate(at)).toBe(uncached(at));
        }
      }),
    );
  });

  it('an invalid instant is an error, not the remembered day', () => {
    koreanDate(new Date('2026-11-22T00:00:00Z'));
    expect(() => koreanDate(new Date(NaN))).toThrow(RangeError);
  });

  it('midnights and month starts', () => {
    expect(startOfKoreanDay('2026-11-23').toISOString()).toBe('2026-11-22T15:00:00.000Z');
    expect(endOfKoreanDay('2026-11-23').toISOString()).toBe('2026-11-23T15:00:00.000Z');
    expect(nextKoreanMidnight(new Date('2026-11-22T15:00:00Z')).toISOString()).toBe('2026-11-23T15:00:00.000Z');
    expect(nextKoreanMonthStart(new Date('2026-12-31T15:00:00Z')).toISOString()).toBe('2027-01-31T15:00:00.000Z');
  });
});
