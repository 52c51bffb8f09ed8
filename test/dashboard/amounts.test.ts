// Amounts as the dashboard shows and takes them: dollars beside credits, and forms that take "$5",
// "5 USD" and "1,000,000" (credits, the way the pages print them) as well as plain numbers.
import { describe, expect, it } from 'vitest';
import { errors } from '../../engine/core/errors.ts';
import { creditsFromText, usdOfCredits, usdOfNano } from '../../engine/dashboard/amounts.ts';
import { inWords } from '../../engine/dashboard/form-errors.ts';

describe('dollars beside credits', () => {
  it('cents from one cent up, every digit below', () => {
    expect(usdOfCredits(105_000_000, 'down')).toBe('$105.00');
    expect(usdOfCredits(1_000_000, 'up')).toBe('$1.00');
    expect(usdOfCredits(0, 'down')).toBe('$0.00');
    expect(usdOfCredits(500, 'up')).toBe('$0.0005');
    expect(usdOfCredits(1, 'down')).toBe('$0.000001');
    expect(usdOfNano(123n, 'down')).toBe('$0.000000123');
    expect(usdOfNano(-5_000_000_000n, 'up')).toBe('-$5.00');
  });
  it('cents round the way the caller says: down for what the wallet has, up for what was spent or is held', () => {
    expect(usdOfCredits(1_234_567_890, 'down')).toBe('$1,234.56');
    expect(usdOfCredits(1_234_567_890, 'up')).toBe('$1,234.57');
    expect(usdOfNano(198_981_960n, 'down')).toBe('$0.19');
    expect(usdOfNano(198_981_960n, 'up')).toBe('$0.20');
    // Half a cent and a hair: half up would read $0.02 for a balance that has less.
    expect(usdOfNano(15_000_000n, 'down')).toBe('$0.01');
    expect(usdOfNano(10_000_001n, 'up')).toBe('$0.02');
    expect(usdOfNano(-15_000_000n, 'down')).toBe('-$0.02');
  });
});

describe('amounts typed in a form', () => {
  const read = (text: string) => creditsFromText(text, 'monthly_limit_credits', 'Monthly limit');
  it('takes credits plain or grouped, and dollars with $ or USD', () => {
    expect(read('500000')).toBe(500_000);
    expect(read('1,000,000')).toBe(1_000_000);
    expect(read('1,000,000 credits')).toBe(1_000_000);
    expect(read('$5')).toBe(5_000_000);
    expect(read(' $ 5 ')).toBe(5_000_000);
    expect(read('5 USD')).toBe(5_000_000);
    expect(read('5usd')).toBe(5_000_000);
    expect(read('US$0.50')).toBe(500_000);
    expect(read('$1,000.25')).toBe(1_000_250_000);
    expect(read('$0.000001')).toBe(1);
    expect(read('0')).toBe(0);
  });
  it('refuses anything else in words, naming the field by its label', () => {
    for (const bad of ['lots', '1,00', '1.5', '-5', '$0.0000001', '5 EUR', '$', '1,000,000,000,000,000,000']) {
      expect(() => read(bad), bad).toThrow(/^Monthly limit: /);
    }
    expect(() => read('lots')).toThrow('"lots" is not an amount. Write credits (such as 500,000) or dollars (such as $5 or 5 USD).');
  });
});

describe('the key checks in the form’s words', () => {
  it('names fields by their labels and says blank for null', () => {
    expect(
      inWords(errors.invalidRequest('daily_limit_credits (9) must not exceed monthly_limit_credits (5).', 'daily_limit_credits')),
    ).toBe('The daily limit (9) must not exceed the monthly limit (5).');
    expect(inWords(errors.invalidRequest('expires_on must be a date YYYY-MM-DD, or null for no expiry.', 'expires_on'))).toBe(
      'The last day must be a date YYYY-MM-DD, or blank for never.',
    );
    expect(inWords(errors.invalidRequest('count must be a whole number from 1 to 100.', 'count'))).toBe(
      'How many must be a whole number from 1 to 100.',
    );
  });
});
