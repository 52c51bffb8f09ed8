// Webhook payloads in the operator's display currency: each amount of credits gets its money beside it.
import { describe, expect, it } from 'vitest';
import { withMoney } from '../../engine/alerts/events.ts';

const WON = { code: 'KRW', per_usd: 1400 };

describe('withMoney (webhook payloads)', () => {
  it('says every amount of credits in money beside it, at every depth, and leaves the payload alone without a currency', () => {
    const data = {
      balance_credits: 50_000_000,
      threshold: { credits: 1_000_000, percent: 5 },
      key: { name: 'credits' },
      used_credits: null,
    };
    expect(withMoney(data, WON)).toEqual({
      balance_credits: 50_000_000,
      balance_money: '₩70,000 · $50.00',
      threshold: { credits: 1_000_000, money: '₩1,400 · $1.00', percent: 5 },
      key: { name: 'credits' },
      used_credits: null,
    });
    expect(withMoney(data, null)).toBe(data);
  });
});
