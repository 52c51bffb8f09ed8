// The charge intent on a lease, under any sequence of write failures, retries and late writes: every call is
// charged at most once (exactly once, since every failure here is passing), the lease's figures never go below
// zero at any moment, and once everything landed the wallet is charged exactly the calls' costs, as far as the
// balance went, with nothing left held. Real ledger (PGlite), with its draws made to fail and to land late.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { openDatabase } from '../../engine/db/open.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import type { LeaseHold, LeaseSettings } from '../../engine/money/leases.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { budgetLeases, noRows } from '../helpers/budget-leases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const UNIT = 1_000_000n;
const settings = (): LeaseSettings => ({
  sliceSeconds: 10,
  minSliceNano: 100n * UNIT,
  maxShare: 0.5,
  ttlMs: 60_000,
  idleReturnMs: 30_000,
  maxPendingDraws: 1_024,
});
const quiet = { warn: () => {}, error: () => {} };

interface CallPlan {
  holdUnits: number;
  /** What the vendor's usage comes to, in units: at, below or far above the hold. */
  costUnits: number;
  /** Passing failures before the draw lands. */
  failures: number;
  /** How late each attempt lands (ms). */
  delayMs: number;
}

/** The ledger with each draw failing its planned number of times and landing late; counts what landed per draw id. */
function flakyDraws(ledger: Ledger, plans: Map<string, CallPlan>, landed: Map<string, number>): Ledger {
  const attempts = new Map<string, number>();
  return Object.create(ledger, {
    draw: {
      value: async (...args: Parameters<Ledger['draw']>) => {
        const id = args[2];
        const plan = plans.get(id);
        const n = (attempts.get(id) ?? 0) + 1;
        attempts.set(id, n);
        await new Promise((r) => setTimeout(r, plan?.delayMs ?? 0));
        if (plan && n <= plan.failures) throw new Error('connection reset');
        const r = await ledger.draw(...args);
        if (!r.alreadyFinished) landed.set(id, (landed.get(id) ?? 0) + 1);
        return r;
      },
    },
  });
}

const figuresOk = (h: LeaseHold) => h.lease.inFlight >= 0n && h.lease.spent >= 0n && h.lease.granted >= h.lease.spent;

describe('the charge intent on a lease', () => {
  it('charges each call at most once and keeps the lease figures non-negative, whatever fails and however late', async () => {
    const db = await openDatabase({ dataDir: 'memory://' });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              holdUnits: fc.integer({ min: 1, max: 20 }),
              costUnits: fc.integer({ min: 0, max: 60 }),
              failures: fc.nat(3),
              delayMs: fc.nat(4),
            }),
            { minLength: 1, maxLength: 10 },
          ),
          fc.integer({ min: 50, max: 400 }),
          async (calls, walletUnits) => {
            const base = createLedger(db, { clock: systemClock, owner: 'intent-test' });
            const w = await base.createWallet();
            await base.topUp(w.id, { nano: BigInt(walletUnits) * UNIT });
            const plans = new Map(calls.map((c, i) => [`call-${w.id}-${i}`, c]));
            const landed = new Map<string, number>();
            const book = budgetLeases(
              flakyDraws(base, plans, landed),
              settings,
              new ChargeWriter(() => quiet, { firstMs: 1, maxMs: 2, attempts: 100 }),
            );
            try {
              const holds: { id: string; h: LeaseHold; plan: CallPlan }[] = [];
              for (const [id, plan] of plans) {
                const h = await book.holdOrWait(w.id, 'b', BigInt(plan.holdUnits) * UNIT);
                if (h) holds.push({ id, h, plan });
              }
              const charges = holds.map(({ id, h, plan }) => {
                const c = book.charge(h, BigInt(plan.costUnits) * UNIT, id, noRows());
                expect(figuresOk(h), `lease figures after settling ${id}`).toBe(true);
                return c;
              });
              const charged = await Promise.all(charges.map((c) => c.committed));
              for (const { h } of holds) expect(figuresOk(h)).toBe(true);
              for (const { id } of holds) expect(landed.get(id) ?? 0, `${id} landed`).toBe(1);
              await book.returnWallet(w.id);
              await book.flushed();
              for (let i = 0; i < 100 && (await base.balance(w.id)).reservedNano > 0n; i++) await new Promise((r) => setTimeout(r, 5));
              const bal = await base.balance(w.id);
              expect(bal.reservedNano, 'a lease stayed held').toBe(0n);
              const { sum } = await expectJournalAddsUp(db, w.id);
              expect(sum.chargedNano).toBe(charged.reduce((a, b) => a + b, 0n));
              // Within the hold a call is charged its cost exactly; above it, as far as the wallet went.
              holds.forEach(({ plan }, i) => {
                if (plan.costUnits <= plan.holdUnits) expect(charged[i]).toBe(BigInt(plan.costUnits) * UNIT);
                else expect(charged[i]! <= BigInt(plan.costUnits) * UNIT).toBe(true);
              });
            } finally {
              await book.close(5_000);
            }
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      await db.close();
    }
  }, 120_000);
});
