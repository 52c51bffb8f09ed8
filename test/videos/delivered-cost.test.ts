// What a delivered video is charged when its vendor status names no charge it can read (engine/videos/vendor-answers.ts).
import { describe, expect, it } from 'vitest';
import { deliveredCost } from '../../engine/videos/vendor-answers.ts';

const held = { nano: 500_000_000n, seconds: 5 }; // $0.10 a second, held for 5 s

describe('deliveredCost', () => {
  it("charges the vendor's own figure when it names one", () => {
    expect(deliveredCost({ usage: { cost_usd: 0.123 } }, held, 5)).toBe(123_000_000n);
  });

  it('charges the price held per second for the seconds delivered, at most those held', () => {
    expect(deliveredCost({}, held, 3)).toBe(300_000_000n);
    expect(deliveredCost({ usage: { cost_usd: -1 } }, held, 100)).toBe(500_000_000n);
  });

  it('a video shorter than a second is charged a second, never nothing', () => {
    // Found by an attack: a status stating duration 0.4 rounded to 0 seconds and the video was free.
    expect(deliveredCost({ video: { duration: 0.4 } }, held, 0)).toBe(100_000_000n);
  });
});
