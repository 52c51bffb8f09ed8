// The one reader of typed amounts (core/money.ts creditsOfAmount): credits, dollars, and whole units of the
// operator's display currency, which are a conversion of input only (the answer is whole credits).
import { describe, expect, it } from 'vitest';
import { creditsOfAmount, nanoToDisplayUnits } from '../../engine/core/money.ts';

const WON = { code: 'KRW', per_usd: 1400 };

describe('creditsOfAmount', () => {
  it('reads won with ₩, 원 or the code when the display currency is KRW', () => {
    expect(creditsOfAmount('₩7000', WON)).toEqual({ credits: 5_000_000n });
    expect(creditsOfAmount('₩50,000', WON)).toEqual({ credits: 35_714_285n }); // rounds down to the credit
    expect(creditsOfAmount('70,000원', WON)).toEqual({ credits: 50_000_000n });
    expect(creditsOfAmount('KRW 1400', WON)).toEqual({ credits: 1_000_000n });
    expect(creditsOfAmount('￦ 14', WON)).toEqual({ credits: 10_000n });
  });
  it('reads dollars and credits the same with or without a display currency', () => {
    for (const currency of [null, WON]) {
      expect(creditsOfAmount('$5', currency)).toEqual({ credits: 5_000_000n });
      expect(creditsOfAmount('5,000,000', currency)).toEqual({ credits: 5_000_000n });
      expect(creditsOfAmount('12 크레딧', currency)).toEqual({ credits: 12n });
    }
  });
  it('refuses won without a display currency, fractions of a won, and amounts past the largest', () => {
    expect(creditsOfAmount('₩7000', null)).toEqual({ refused: 'not_amount' });
    expect(creditsOfAmount('₩70.5', WON)).toEqual({ refused: 'not_display_units' });
    expect(creditsOfAmount('₩1,00', WON)).toEqual({ refused: 'not_display_units' });
    expect(creditsOfAmount('$9,000,001', WON)).toEqual({ refused: 'too_large' });
    expect(creditsOfAmount('€5', WON)).toEqual({ refused: 'not_amount' });
  });
});

describe('nanoToDisplayUnits', () => {
  it('is whole won, half away from zero, at a rate with decimals too', () => {
    expect(nanoToDisplayUnits(50_000_000_000n, WON)).toBe(70_000n);
    expect(nanoToDisplayUnits(-50_000_000_000n, WON)).toBe(-70_000n);
    expect(nanoToDisplayUnits(1_000_000_000n, { code: 'KRW', per_usd: 1385.5 })).toBe(1386n);
    expect(nanoToDisplayUnits(1_000_000_000n, { code: 'KRW', per_usd: 1385.4 })).toBe(1385n);
  });
});
