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

  it("rounds what the wallet has down and what was used up, the owner's own figures as typed", () => {
    // 9,997,500 credits are ₩13,996.5 and $9.9975; "₩1,000" is kept as 714,285 credits in a threshold (a cap,
    // rounded down) and as 714,286 in a top-up (money given, rounded up).
    expect(withMoney({ balance_credits: 9_997_500, last_top_up_credits: 714_286, threshold: { credits: 714_285 } }, WON)).toEqual({
      balance_credits: 9_997_500,
      balance_money: '₩13,996 · $9.99',
      last_top_up_credits: 714_286,
      last_top_up_money: '₩1,000 · $0.71',
      threshold: { credits: 714_285, money: '₩1,000 · $0.72' },
    });
    expect(withMoney({ limit_credits: 714_285, used_credits: 9_997_500 }, WON)).toMatchObject({
      limit_money: '₩1,000 · $0.72',
      used_money: '₩13,997 · $10.00',
    });
    expect(withMoney({ lot: { id: 'lot_1' }, credits: 9_997_500 }, WON)).toMatchObject({ money: '₩13,996 · $9.99' });
  });

  it('refuses an amount of credits whose rounding nobody chose', () => {
    expect(() => withMoney({ refund_credits: 5 }, WON)).toThrow(/refund_credits has no rounding/);
    expect(() => withMoney({ key: { credits: 5 } }, WON)).toThrow(/key\.credits has no rounding/);
  });
});
