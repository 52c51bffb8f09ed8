// The ledger auditor finds each broken invariant it claims to check: a ledger made by hand (real reserves,
// settles and releases, plus direct damage to the tables) against outcome records made by hand.
import { beforeEach, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import type { Outcome, UsageBuckets } from '../../simulator/index.ts';
import { type AuditedCall, auditLedger, usageCostNano } from '../helpers/auditor.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const PRICES = { input: 1.25, output: 10, cache_read: 0.125 };
const USAGE: UsageBuckets = { input: 100, output: 40, cache_read: 0, cache_write: 0, reasoning: 0 };
const COST = usageCostNano(USAGE, PRICES); // 100 × 1250 + 40 × 10000 = 525,000 nano

function outcome(tag: string, over: Partial<Outcome>): Outcome {
  return {
    seq: 1,
    route: 'b0',
    path: '/v1/chat/completions',
    model: 'b-5',
    callTag: tag,
    streaming: false,
    fault: null,
    status: 200,
    delivered: 'complete',
    refused: false,
    events: 0,
    usage: USAGE,
    usageReported: true,
    ...over,
  };
}

describeEachDatabase('ledger auditor', (getDb) => {
  let ledger: Ledger;
  let walletId: string;
  let n = 0;
  beforeEach(async () => {
    ledger = createLedger(getDb(), { clock: systemClock, owner: 'auditor-test' });
    walletId = (await ledger.createWallet({ credits: 1_000_000 })).id;
  });

  /** One call: its own key id, a reservation of 1,000,000 nano, then `finish`. */
  async function call(finish: (resId: string) => Promise<unknown>): Promise<AuditedCall> {
    const tag = `t${++n}`;
    const keyId = `key_${tag}_${walletId}`;
    const r = await ledger.reserve({ walletId, vendor: 'b', amountNano: 1_000_000n, callId: tag, keyId });
    if (!r.ok) throw new Error('reserve refused');
    await finish(r.reservation.id);
    return { tag, walletId, keyId, model: 'b-5' };
  }
  const audit = (calls: AuditedCall[], outcomes: Outcome[]) =>
    auditLedger({ db: getDb(), walletIds: [walletId], calls, outcomes, pricesOf: () => PRICES });

  it('a call charged exactly its usage and a refused call released: clean', async () => {
    expect(COST).toBe(525_000n);
    const answered = await call((id) => ledger.settle(id, COST));
    const refused = await call((id) => ledger.release(id));
    const report = await audit(
      [answered, refused],
      [outcome(answered.tag, {}), outcome(refused.tag, { delivered: 'none', refused: true, status: 529, usage: null })],
    );
    expect(report.problems).toEqual([]);
    expect(report.figures).toMatchObject({ answered: 1, refused: 1, lostNano: 0n, createdNano: 0n, holdsLeft: 0 });
  });

  it('charged short, charged over, charged for a refusal, a hold left', async () => {
    const short = await call((id) => ledger.settle(id, COST - 1000n));
    const over = await call((id) => ledger.settle(id, COST + 7n));
    const refused = await call((id) => ledger.settle(id, 5n));
    const held = await call(async () => undefined);
    const report = await audit(
      [short, over, refused, held],
      [
        outcome(short.tag, {}),
        outcome(over.tag, {}),
        outcome(refused.tag, { delivered: 'none', refused: true, status: 500, usage: null }),
        outcome(held.tag, { delivered: 'none', refused: true, status: null, usage: null }),
      ],
    );
    expect(report.figures.lostNano).toBe(1000n);
    expect(report.figures.createdNano).toBe(12n);
    expect(report.figures.holdsLeft).toBe(1);
    expect(report.problems.join('\n')).toMatch(/charged short/);
    expect(report.problems.join('\n')).toMatch(/charged above the vendor’s usage/);
    expect(report.problems.join('\n')).toMatch(/never answered/);
    expect(report.problems.join('\n')).toMatch(/1 hold\(s\) outlived/);
  });

  it('an answer without usage charged nothing is lost money; an estimate is measured against the real usage', async () => {
    const free = await call((id) => ledger.release(id));
    const estimated = await call((id) => ledger.settle(id, COST + 300n));
    const report = await audit(
      [free, estimated],
      [outcome(free.tag, { usageReported: false }), outcome(estimated.tag, { usageReported: false })],
    );
    expect(report.figures).toMatchObject({ estimated: 2, lostNano: COST, estimateGapNano: 300n - COST, createdNano: 0n });
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatch(/charged nothing/);
  });

  it('two vendor answers for one call are both billed; a journal out of step with the balance is found', async () => {
    const twice = await call((id) => ledger.settle(id, 2n * COST));
    await getDb().query(`UPDATE credit_lots SET available_nano = available_nano + 1 WHERE wallet_id = $1`, [walletId]);
    const report = await audit([twice], [outcome(twice.tag, { seq: 1 }), outcome(twice.tag, { seq: 2, route: 'b1' })]);
    expect(report.figures.createdNano).toBe(0n);
    expect(report.problems.some((p) => p.includes('≠ journal'))).toBe(true);
    expect(report.problems.some((p) => p.includes('its lots ≠ its journal'))).toBe(true);
  });
});
