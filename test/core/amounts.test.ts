// The one reader of typed amounts (core/money.ts creditsOfAmount): credits, dollars, and whole units of the
// operator's display currency, which are a conversion of input only (the answer is whole credits).
import { describe, expect, it } from 'vitest';
import {
  creditsOfAmount,
  creditsToNano,
  displayUnitsAddingUp,
  displayUnitsText,
  moneyText,
  nanoToDisplayUnits,
  usdNumber,
  usdText,
} from '../../engine/core/money.ts';

const WON = { code: 'KRW', per_usd: 1400 };

describe('creditsOfAmount', () => {
  it('reads won with ₩, 원 or the code when the display currency is KRW', () => {
    expect(creditsOfAmount('₩7000', WON)).toEqual({ credits: 5_000_000n });
    expect(creditsOfAmount('₩50,000', WON)).toEqual({ credits: 35_714_285n }); // a cap rounds down to the credit
    expect(creditsOfAmount('₩50,000', WON, 'up')).toEqual({ credits: 35_714_286n }); // money given rounds up
    expect(creditsOfAmount('₩7000', WON, 'up')).toEqual({ credits: 5_000_000n }); // a whole credit stays as it is
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

describe('money shown rounds the one way its caller says', () => {
  // ₩13,996.5 at 1,400 a dollar: 9,997,500 whole credits, $9.9975, half a won and half a cent at once.
  const HALF = 9_997_500_000n;

  it('whole units: down toward minus infinity, up toward plus infinity, exact amounts as they are', () => {
    expect(nanoToDisplayUnits(HALF, WON, 'down')).toBe(13_996n);
    expect(nanoToDisplayUnits(HALF, WON, 'up')).toBe(13_997n);
    expect(nanoToDisplayUnits(HALF + 1n, WON, 'down')).toBe(13_996n);
    expect(nanoToDisplayUnits(HALF - 1n, WON, 'up')).toBe(13_997n);
    expect(nanoToDisplayUnits(50_000_000_000n, WON, 'down')).toBe(70_000n);
    expect(nanoToDisplayUnits(50_000_000_000n, WON, 'up')).toBe(70_000n);
    expect(nanoToDisplayUnits(-50_000_000_000n, WON, 'down')).toBe(-70_000n);
    expect(nanoToDisplayUnits(-HALF, WON, 'down')).toBe(-13_997n);
    expect(nanoToDisplayUnits(-HALF, WON, 'up')).toBe(-13_996n);
    expect(nanoToDisplayUnits(1_000_000_000n, { code: 'KRW', per_usd: 1385.5 }, 'down')).toBe(1385n);
    expect(nanoToDisplayUnits(1_000_000_000n, { code: 'KRW', per_usd: 1385.4 }, 'up')).toBe(1386n);
  });

  it('a balance never reads more than it is, a charge never less, and under one won reads <₩1 either way', () => {
    expect(displayUnitsText(HALF, WON, 'down')).toBe('₩13,996');
    expect(displayUnitsText(HALF, WON, 'up')).toBe('₩13,997');
    expect(displayUnitsText(HALF, WON, 'down', 'ko-KR')).toBe('₩13,996');
    expect(displayUnitsText(10_125_000n, WON, 'up')).toBe('₩15'); // ₩14.175
    expect(displayUnitsText(10_125_000n, WON, 'down')).toBe('₩14');
    expect(displayUnitsText(1n, WON, 'up')).toBe('<₩1');
    expect(displayUnitsText(714_285n, WON, 'up')).toBe('<₩1'); // ₩0.999999
    expect(displayUnitsText(714_286n, WON, 'up')).toBe('₩2');
    expect(displayUnitsText(714_286n, WON, 'down')).toBe('₩1');
    expect(displayUnitsText(0n, WON, 'up')).toBe('₩0');
    // What the owner typed in whole won reads back as typed: a cap (a limit, a threshold) is kept rounded down to
    // the credit and shown rounded up; money given (a top-up) is kept rounded up and shown rounded down, as the
    // balance it makes is, so ₩100,000 topped up reads ₩100,000 and not ₩99,999.
    for (const typed of ['₩1,000', '₩50,000', '₩13,997', '₩7', '₩100,000']) {
      for (const [kept, shown] of [
        ['down', 'up'],
        ['up', 'down'],
      ] as const) {
        const read = creditsOfAmount(typed, WON, kept);
        if (!('credits' in read)) throw new Error(`refused ${typed}`);
        expect(displayUnitsText(creditsToNano(read.credits), WON, shown)).toBe(typed);
      }
    }
  });

  it('moneyText rounds the won and the dollars beside them the same way; below a cent every digit', () => {
    expect(moneyText(HALF, WON, 'down')).toBe('₩13,996 · $9.99');
    expect(moneyText(HALF, WON, 'up')).toBe('₩13,997 · $10.00');
    expect(moneyText(10_125_000n, WON, 'up')).toBe('₩15 · $0.02');
    expect(moneyText(10_125_000n, null, 'down')).toBe('$0.01');
    expect(moneyText(50_000_000_000n, WON, 'down')).toBe('₩70,000 · $50.00');
    expect(moneyText(357_143n, WON, 'up')).toBe('<₩1 · $0.000357143');
    expect(moneyText(-15_000_000n, null, 'down')).toBe('-$0.02');
    expect(moneyText(-15_000_000n, null, 'up')).toBe('-$0.01');
  });
});

describe('whole won for the lines of a statement', () => {
  const wonNano = (won: number) => (BigInt(won) * 1_000_000_000n) / 1400n; // just under that many won (rounded down)

  it('rounds the total up as a charge and makes the lines add up to it, the largest remainders taking the rest', () => {
    // ₩0.4 + ₩0.4 + ₩0.4 = ₩1.2 → ₩2: each line rounded up alone would add up to ₩3.
    const nano = (tenthsOfWon: number) => (BigInt(tenthsOfWon) * 1_000_000_000n) / 14_000n;
    const three = [nano(4), nano(4), nano(4)];
    expect(three.map((n) => nanoToDisplayUnits(n, WON, 'up'))).toEqual([1n, 1n, 1n]);
    expect(displayUnitsAddingUp(three, WON)).toEqual({ parts: [1n, 1n, 0n], total: 2n });
    // The larger remainder gets the won: ₩0.3 and ₩0.8 are ₩1.1 → ₩2, one each.
    expect(displayUnitsAddingUp([nano(3), nano(8)], WON)).toEqual({ parts: [1n, 1n], total: 2n });
    expect(displayUnitsAddingUp([nano(2), nano(7), 0n], WON)).toEqual({ parts: [0n, 1n, 0n], total: 1n });
  });

  it('keeps whole amounts and free lines as they are; nothing is nothing', () => {
    const exact = [70_000n, 1_400n].map((won) => (won * 1_000_000_000n) / 1400n);
    expect(displayUnitsAddingUp([...exact, 0n], WON)).toEqual({ parts: [70_000n, 1_400n, 0n], total: 71_400n });
    expect(displayUnitsAddingUp([], WON)).toEqual({ parts: [], total: 0n });
  });

  it('adds up over many small lines, which rounded alone would overstate the total many times', () => {
    const lines = Array.from({ length: 500 }, (_, i) => wonNano(1) / BigInt(2 + (i % 7)));
    const { parts, total } = displayUnitsAddingUp(lines, WON);
    expect(parts.reduce((a, b) => a + b, 0n)).toBe(total);
    expect(total).toBe(
      nanoToDisplayUnits(
        lines.reduce((a, b) => a + b, 0n),
        WON,
        'up',
      ),
    );
    expect(lines.reduce((a, n) => a + nanoToDisplayUnits(n, WON, 'up'), 0n)).toBe(500n);
    expect(total).toBeLessThan(200n);
  });
});

describe('dollars of nano-USD', () => {
  it('writes the exact decimal, nine places, a negative sign before the whole', () => {
    expect(usdText(1_250_000_000n)).toBe('1.250000000');
    expect(usdText(7n)).toBe('0.000000007');
    expect(usdText(-1_500_000_001n)).toBe('-1.500000001');
    expect(usdText(0n)).toBe('0.000000000');
  });
  it("gives a cost_usd field the double nearest the exact decimal, as a video's view and its webhook event both show", () => {
    expect(usdNumber(70_000_000n)).toBe(0.07);
    expect(usdNumber(120_000_000n)).toBe(0.12);
    expect(usdNumber(-1_500_000_001n)).toBe(-1.500000001);
  });
});
