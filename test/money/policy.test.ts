// Properties of the ledger's pure decisions (engine/money/policy.ts), without a database: arbitrary lots
// in two wallets, then arbitrary sequences of reserve, settle, release and expire decided by one Book.
// The expectations are computed here from the rules as stated (draw order, plan rule, caps), not by
// calling the policy's own helpers.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Book, type LotState, type ResState } from '../../engine/money/policy.ts';
import type { FinishOutcome, ReserveOp } from '../../engine/money/types.ts';

const WALLETS = ['w1', 'w2'] as const;
const VENDORS = ['a', 'b', 'c', 'd'] as const;
const PLAN = ['c'];
const T0 = new Date('2026-05-01T00:00:00Z');
const EXPIRES = new Date(T0.getTime() + 3_600_000);
const RUNS = { numRuns: 500 };

interface LotInit {
  walletId: string;
  vendors: string[] | null;
  avail: bigint;
}
type Step =
  | { kind: 'reserve'; walletId: string; vendor: string; amount: bigint }
  | { kind: 'settle' | 'release'; pick: number; actual: bigint }
  | { kind: 'expire'; pick: number; extended: boolean };
interface Scenario {
  lots: LotInit[];
  steps: Step[];
}

const lotArb: fc.Arbitrary<LotInit> = fc.record({
  walletId: fc.constantFrom(...WALLETS),
  vendors: fc.option(fc.subarray([...VENDORS], { minLength: 1 }), { nil: null }),
  avail: fc.bigInt({ min: 0n, max: 5_000n }),
});
/** Mostly amounts a lot or two can cover, sometimes more than a wallet has. */
const amountArb = fc.oneof(
  { weight: 3, arbitrary: fc.bigInt({ min: 0n, max: 1_500n }) },
  { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: 12_000n }) },
);
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('reserve' as const),
      walletId: fc.constantFrom(...WALLETS),
      vendor: fc.constantFrom(...VENDORS),
      amount: amountArb,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      actual: fc.oneof(amountArb, fc.bigInt({ min: -100n, max: -1n })),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat(), actual: fc.constant(0n) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expire' as const), pick: fc.nat(), extended: fc.boolean() }) },
);
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  lots: fc.array(lotArb, { minLength: 0, maxLength: 6 }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 40 }),
});

// ---------------------------------------------------------------------------------------------------
// The rules as stated, written independently of policy.ts.

const serves = (l: { vendors: string[] | null }, vendor: string) => l.vendors === null || l.vendors.includes(vendor);
/** Restricted lots first, then unrestricted; by seq within each group. */
const expectedDrawOrder = (lots: LotState[], walletId: string, vendor: string) =>
  lots
    .filter((l) => l.walletId === walletId && l.avail > 0n && serves(l, vendor))
    .sort((x, y) => Number(x.vendors === null) - Number(y.vendors === null) || Number(x.seq - y.seq));
const sum = (xs: bigint[]) => xs.reduce((a, b) => a + b, 0n);
const min = (a: bigint, b: bigint) => (a < b ? a : b);

// ---------------------------------------------------------------------------------------------------
// Running a scenario: every step, with the state before and after, goes to `check`.

type Snapshot = Map<string, { avail: bigint; reserved: bigint }>;
interface StepView {
  step: Step;
  lots: LotState[];
  book: Book;
  /** Ids of the reservations made so far. */
  made: string[];
  /** Lot balances just before the step. */
  before: Snapshot;
  journalBefore: number;
  /** reserve: the op decided. */
  op?: ReserveOp;
  /** reserve: what it answered ('drawn' lists the lots it drew from). */
  reserved?: { ok: true; drawn: { lotId: string; amountNano: bigint }[] } | { ok: false; reason: string; availableNano: bigint };
  /** settle/release/expire: the reservation as it was before, and the outcome. */
  target?: ResState;
  finished?: FinishOutcome;
  /** Settle/release/expire outcomes of the same reservation so far (before this step). */
  earlier?: FinishOutcome[];
}

const snapshot = (lots: LotState[]): Snapshot => new Map(lots.map((l) => [l.id, { avail: l.avail, reserved: l.reserved }]));
const copyRes = (r: ResState): ResState => ({ ...r, held: new Map(r.held) });

function run(s: Scenario, check: (v: StepView) => void): { lots: LotState[]; book: Book; initial: Map<string, bigint> } {
  // seq follows creation order; the Book gets the lots shuffled (reversed), as it must order them itself.
  const lots: LotState[] = s.lots.map((l, i) => ({
    id: `lot${i}`,
    walletId: l.walletId,
    seq: BigInt(i + 1),
    vendors: l.vendors,
    avail: l.avail,
    reserved: 0n,
  }));
  const initial = new Map(lots.map((l) => [l.id, l.avail]));
  const book = new Book([...lots].reverse());
  const made: string[] = [];
  const history = new Map<string, FinishOutcome[]>();
  s.steps.forEach((step, i) => {
    const view: StepView = { step, lots, book, made, before: snapshot(lots), journalBefore: book.moves.journal.length };
    const at = new Date(T0.getTime() + i * 1000);
    if (step.kind === 'reserve') {
      const op: ReserveOp = {
        kind: 'reserve',
        id: `res${i}`,
        walletId: step.walletId,
        vendor: step.vendor,
        amountNano: step.amount,
        callId: `call${i}`,
        keyId: null,
        createdAt: at,
        expiresAt: EXPIRES,
      };
      const drawn = book.reserve(op);
      const own = lots.filter((l) => l.walletId === op.walletId);
      const facts = { exists: true, anyLot: own.length > 0, usableLot: own.some((l) => serves(l, op.vendor)) };
      const r = 'undecided' in drawn ? book.reserveWithFacts(op, drawn.usableNano, facts, PLAN) : drawn;
      if (r.ok) made.push(op.id);
      view.op = op;
      view.reserved = r.ok ? { ok: true, drawn: r.lots } : r;
    } else {
      if (made.length === 0) return;
      const id = made[step.pick % made.length]!;
      view.target = copyRes(book.reservation(id)!);
      view.earlier = [...(history.get(id) ?? [])];
      const expireBefore = step.kind === 'expire' ? new Date(EXPIRES.getTime() + (step.extended ? -1 : 1)) : undefined;
      view.finished = book.finish({ kind: step.kind, id: id!, actualNano: step.kind === 'expire' ? 0n : step.actual, expireBefore }, at);
      history.set(id, [...view.earlier, view.finished]);
    }
    check(view);
  });
  return { lots, book, initial };
}

const forAllSteps = (check: (v: StepView) => void) =>
  fc.assert(
    fc.property(scenarioArb, (s) => void run(s, check)),
    RUNS,
  );

/** Nothing moved: same balances, no new journal rows. */
function expectNothingMoved(v: StepView) {
  expect(snapshot(v.lots)).toEqual(v.before);
  expect(v.book.moves.journal.length).toBe(v.journalBefore);
}

/** Σ available on the wallet's lots that serve the vendor, just before the step. */
const usableBefore = (v: StepView, walletId: string, vendor: string) =>
  sum(v.lots.filter((l) => l.walletId === walletId && serves(l, vendor)).map((l) => v.before.get(l.id)!.avail));

// ---------------------------------------------------------------------------------------------------

describe('ledger policy (pure, no database)', () => {
  it('no lot ever goes negative, and reserved money is exactly what held reservations hold', () => {
    forAllSteps((v) => {
      const holding = v.made.map((id) => v.book.reservation(id)!).filter((r) => r.state === 'held');
      for (const l of v.lots) {
        expect(l.avail >= 0n && l.reserved >= 0n).toBe(true);
        expect(l.reserved).toBe(sum(holding.map((r) => r.held.get(l.id) ?? 0n)));
      }
    });
  });

  it('money is conserved per lot: granted = available + reserved + charged, and the journal says the same', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { lots, book, initial } = run(s, () => {});
        for (const l of lots) {
          const j = book.moves.journal.filter((e) => e.lotId === l.id);
          const by = (kind: string) => sum(j.filter((e) => e.kind === kind).map((e) => e.amount));
          expect(initial.get(l.id)).toBe(l.avail + l.reserved + by('settle'));
          expect(l.avail).toBe(initial.get(l.id)! - by('reserve') + by('release'));
          expect(l.reserved).toBe(by('reserve') - by('settle') - by('release'));
          expect(j.every((e) => e.walletId === l.walletId && e.amount > 0n)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it('the recorded writes reproduce the decisions: lot deltas give the final balances', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { lots, book, initial } = run(s, () => {});
        for (const l of lots) {
          const d = book.moves.lotDelta.get(l.id) ?? { avail: 0n, reserved: 0n };
          expect(initial.get(l.id)! + d.avail).toBe(l.avail);
          expect(d.reserved).toBe(l.reserved);
        }
      }),
      RUNS,
    );
  });

  it('a reservation draws only from its wallet lots that serve its vendor, restricted first, in seq order, greedily', () => {
    forAllSteps((v) => {
      if (!v.op || !v.reserved?.ok) return;
      const drawn = v.reserved.drawn;
      expect(sum(drawn.map((d) => d.amountNano))).toBe(v.op.amountNano);
      const before = v.lots.map((l) => ({ ...l, ...v.before.get(l.id)! }));
      const order = expectedDrawOrder(before, v.op.walletId, v.op.vendor);
      // The lots drawn are the first ones in draw order; every one but the last is emptied.
      expect(drawn.map((d) => d.lotId)).toEqual(order.slice(0, drawn.length).map((l) => l.id));
      drawn.forEach((d, i) => {
        const avail = v.before.get(d.lotId)!.avail;
        expect(d.amountNano > 0n).toBe(true);
        if (i < drawn.length - 1) expect(d.amountNano).toBe(avail);
        else expect(d.amountNano <= avail).toBe(true);
      });
    });
  });

  it('a reserve is accepted exactly when the plan allows it and the usable lots cover it; a refusal says why and moves nothing', () => {
    forAllSteps((v) => {
      if (!v.op || !v.reserved) return;
      const usable = usableBefore(v, v.op.walletId, v.op.vendor);
      const own = v.lots.filter((l) => l.walletId === v.op!.walletId);
      // The plan rule comes first: it refuses even a reservation of nothing.
      const notInPlan = PLAN.includes(v.op.vendor) && own.length > 0 && !own.some((l) => serves(l, v.op!.vendor));
      expect(v.reserved.ok).toBe(!notInPlan && usable >= v.op.amountNano);
      if (v.reserved.ok) return;
      expectNothingMoved(v);
      expect(v.reserved).toEqual(
        notInPlan
          ? { ok: false, reason: 'not_in_plan', availableNano: 0n }
          : { ok: false, reason: 'insufficient_credit', availableNano: usable },
      );
    });
  });

  it('a settle charges min(actual, held + usable available), never more; the rest of the hold is released; the shortfall is what was not charged', () => {
    forAllSteps((v) => {
      if (v.step.kind !== 'settle' || !v.target || !v.finished || !v.finished.finished) return;
      const t = v.target;
      const actual = v.step.actual < 0n ? 0n : v.step.actual;
      const held = t.state === 'held' ? sum([...t.held.values()]) : 0n;
      const cover = held + usableBefore(v, t.walletId, t.vendor);
      const charged = min(actual, cover);
      expect(v.finished).toEqual({
        chargedNano: charged,
        shortfallNano: actual - charged,
        alreadyFinished: false,
        releasedNano: held - min(actual, held),
        finished: true,
      });
      // The wallet's lots lost exactly the charge (available + reserved), and hold nothing for it any more.
      const own = v.lots.filter((l) => l.walletId === t.walletId);
      const total = (get: (id: string) => { avail: bigint; reserved: bigint }) => sum(own.map((l) => get(l.id).avail + get(l.id).reserved));
      expect(total((id) => v.before.get(id)!) - total((id) => v.lots.find((l) => l.id === id)!)).toBe(charged);
      expect(v.book.reservation(t.id)).toMatchObject({ state: 'settled', charged });
    });
  });

  it('a release (or an expiry) returns exactly what was held, to the lots it was held on', () => {
    forAllSteps((v) => {
      if ((v.step.kind !== 'release' && v.step.kind !== 'expire') || !v.target || !v.finished?.finished) return;
      const t = v.target;
      expect(t.state).toBe('held');
      expect(v.finished).toEqual({ chargedNano: 0n, shortfallNano: 0n, alreadyFinished: false, releasedNano: t.amount, finished: true });
      expect(sum([...t.held.values()])).toBe(t.amount);
      for (const l of v.lots) {
        const h = t.held.get(l.id) ?? 0n;
        const b = v.before.get(l.id)!;
        expect({ avail: l.avail, reserved: l.reserved }).toEqual({ avail: b.avail + h, reserved: b.reserved - h });
      }
      expect(v.book.reservation(t.id)?.state).toBe(v.step.kind === 'release' ? 'released' : 'expired');
    });
  });

  it('finishing twice does nothing the second time: it returns the charge already made and moves no money', () => {
    forAllSteps((v) => {
      if (!v.target || !v.finished || !v.earlier) return;
      // The finish that last moved it (an expiry may be followed by a late settle).
      const first = [...v.earlier].reverse().find((o) => o.finished);
      const settledBefore = v.target.state === 'settled' || v.target.state === 'released';
      const expiredBefore = v.target.state === 'expired' && v.step.kind !== 'settle';
      if (!settledBefore && !expiredBefore) return;
      expect(first).toBeDefined();
      expect(v.finished).toEqual({
        chargedNano: v.target.charged,
        shortfallNano: 0n,
        alreadyFinished: true,
        releasedNano: 0n,
        finished: false,
      });
      expect(v.finished.chargedNano).toBe(first!.chargedNano);
      expectNothingMoved(v);
    });
  });

  it('an expiry of a reservation extended past it does nothing', () => {
    forAllSteps((v) => {
      if (v.step.kind !== 'expire' || !v.step.extended || !v.target || v.target.state !== 'held') return;
      expect(v.finished).toMatchObject({ finished: false, alreadyFinished: false, chargedNano: 0n });
      expectNothingMoved(v);
      expect(v.book.reservation(v.target.id)?.state).toBe('held');
    });
  });

  it('settling an expired reservation late charges from available balance only, as far as it goes', () => {
    forAllSteps((v) => {
      if (v.step.kind !== 'settle' || v.target?.state !== 'expired') return;
      const actual = v.step.actual < 0n ? 0n : v.step.actual;
      const charged = min(actual, usableBefore(v, v.target.walletId, v.target.vendor));
      expect(v.finished).toMatchObject({ chargedNano: charged, shortfallNano: actual - charged, releasedNano: 0n, finished: true });
    });
  });
});
