// Properties of draws (policy.ts, no database): a lease reserved from arbitrary lots, then arbitrary draws
// (some repeating an id) and perhaps a release. Expectations come from the rules as stated: a draw charges
// from what the lease still holds, then from available balance as far as it goes; a repeated id charges
// nothing; money is conserved; a release gives back exactly what is still held.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Book, type LotState } from '../../engine/money/policy.ts';

const T0 = new Date('2026-05-01T00:00:00Z');

const scenarioArb = fc.record({
  lots: fc.array(fc.record({ restricted: fc.boolean(), avail: fc.bigInt({ min: 0n, max: 5_000n }) }), { minLength: 1, maxLength: 5 }),
  lease: fc.bigInt({ min: 0n, max: 8_000n }),
  draws: fc.array(fc.record({ id: fc.integer({ min: 0, max: 12 }), amount: fc.bigInt({ min: -50n, max: 3_000n }) }), {
    minLength: 1,
    maxLength: 30,
  }),
  release: fc.boolean(),
});

describe('draws on a lease (policy)', () => {
  it('charge from the hold, then from available as far as it goes; once per id; money conserved', () => {
    fc.assert(
      fc.property(scenarioArb, (sc) => {
        const lots: LotState[] = sc.lots.map((l, i) => ({
          id: `lot${i}`,
          walletId: 'w',
          seq: BigInt(i),
          vendors: l.restricted ? ['b'] : null,
          avail: l.avail,
          reserved: 0n,
        }));
        const total = lots.reduce((a, l) => a + l.avail, 0n);
        const book = new Book(lots);
        const reserved = book.reserve({
          kind: 'reserve',
          id: 'lease',
          walletId: 'w',
          vendor: 'b',
          amountNano: sc.lease,
          callId: 'lease:p',
          keyId: null,
          createdAt: T0,
          expiresAt: T0,
        });
        if (!('ok' in reserved) || !reserved.ok) return; // the lots cannot cover the lease: nothing to draw on
        let held = sc.lease;
        let charged = 0n;
        const seen = new Set<number>();
        for (const d of sc.draws) {
          const availBefore = lots.reduce((a, l) => a + l.avail, 0n);
          const out = book.finish({ kind: 'draw', id: 'lease', actualNano: d.amount, drawId: `d${d.id}` }, T0);
          const want = d.amount < 0n ? 0n : d.amount;
          if (seen.has(d.id)) {
            expect(out.chargedNano).toBe(0n);
            continue;
          }
          seen.add(d.id);
          const fromHold = want < held ? want : held;
          const fromAvail = want - fromHold < availBefore ? want - fromHold : availBefore;
          expect(out.chargedNano).toBe(fromHold + fromAvail);
          expect(out.shortfallNano).toBe(want - fromHold - fromAvail);
          held -= fromHold;
          charged += out.chargedNano;
          expect(book.reservation('lease')!.amount).toBe(held);
        }
        const sumHeld = [...book.reservation('lease')!.held.values()].reduce((a, b) => a + b, 0n);
        expect(sumHeld).toBe(held);
        expect(lots.reduce((a, l) => a + l.reserved, 0n)).toBe(held);
        if (sc.release) {
          const r = book.finish({ kind: 'release', id: 'lease', actualNano: 0n }, T0);
          expect(r.releasedNano).toBe(held);
          expect(lots.reduce((a, l) => a + l.reserved, 0n)).toBe(0n);
          expect(book.reservation('lease')!.charged).toBe(charged); // draws stay charged
        }
        const left = lots.reduce((a, l) => a + l.avail + l.reserved, 0n);
        expect(left + charged).toBe(total);
        for (const l of lots) expect(l.avail >= 0n && l.reserved >= 0n).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
