// A draw on a reservation of a capped key, then a capped reserve of that key, in one batch (policy.ts, no
// database): decided exactly as when each runs in a batch of its own. The batch reads the key's standing once
// (finished use, what its held reservations hold); a draw moves what it takes of the hold into the key's use,
// so the Book must keep that standing current, as it does for settles and trims. The one-per-batch run reads
// the standing afresh before the reserve, as the batcher would: the use plus what the draws charged (their
// charge rows count it on the key), and the amounts the key's reservations still hold.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Book, type KeyStanding, type LotState, type ResState } from '../../engine/money/policy.ts';
import type { KeyCap, ReserveOp } from '../../engine/money/types.ts';

const T0 = new Date('2026-05-01T00:00:00Z');
const KEY = 'key_capped';
const FACTS = { exists: true, anyLot: true, usableLot: true };

const scenarioArb = fc.record({
  lots: fc.array(fc.record({ restricted: fc.boolean(), avail: fc.bigInt({ min: 0n, max: 5_000n }) }), { minLength: 1, maxLength: 4 }),
  /** The key's reservations held before the batch; the draws go to the first. */
  holds: fc.array(fc.bigInt({ min: 0n, max: 3_000n }), { minLength: 1, maxLength: 3 }),
  /** The drawn reservation was released before (a draw then charges from available only). */
  released: fc.boolean(),
  draws: fc.array(
    fc.record({
      amount: fc.bigInt({ min: 0n, max: 4_000n }),
      holdAtMost: fc.option(fc.bigInt({ min: 0n, max: 4_000n }), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  usedNano: fc.bigInt({ min: 0n, max: 6_000n }),
  limitNano: fc.bigInt({ min: 0n, max: 15_000n }),
  reserve: fc.bigInt({ min: 0n, max: 5_000n }),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

const copyLots = (lots: LotState[]) => lots.map((l) => ({ ...l }));
const copyRes = (res: Map<string, ResState>) => new Map([...res].map(([id, r]) => [id, { ...r, held: new Map(r.held) }]));
/** The standing a batch reads under the key's lock: the use, and what the key's held reservations hold. */
const standingRead = (res: Map<string, ResState>, usedNano: bigint): KeyStanding => ({
  usedNano,
  heldNano: [...res.values()].filter((r) => r.keyId === KEY && r.state === 'held').reduce((a, r) => a + r.amount, 0n),
});

/** The rows as they are before the batch: lots, and the key's reservations made (and maybe one released) earlier. */
function before(sc: Scenario): { lots: LotState[]; res: Map<string, ResState> } | null {
  const lots: LotState[] = sc.lots.map((l, i) => ({
    id: `lot${i}`,
    walletId: 'w',
    seq: BigInt(i),
    vendors: l.restricted ? ['b'] : null,
    avail: l.avail,
    reserved: 0n,
  }));
  const res = new Map<string, ResState>();
  const book = new Book(lots, res);
  for (const [i, amount] of sc.holds.entries()) {
    const r = book.reserve({
      kind: 'reserve',
      id: `res${i}`,
      walletId: 'w',
      vendor: 'b',
      amountNano: amount,
      callId: `c${i}`,
      keyId: KEY,
      createdAt: T0,
      expiresAt: T0,
    });
    if (!('ok' in r) || !r.ok) return null; // the lots cannot cover it: nothing to draw on
  }
  if (sc.released) book.finish({ kind: 'release', id: 'res0', actualNano: 0n }, T0);
  return { lots, res };
}

function decide(book: Book, sc: Scenario, step: number | 'reserve') {
  if (step !== 'reserve') {
    const d = sc.draws[step]!;
    return book.finish({ kind: 'draw', id: 'res0', actualNano: d.amount, drawId: `d${step}`, holdAtMostNano: d.holdAtMost }, T0);
  }
  const cap: KeyCap = { limitNano: sc.limitNano, days: { from: '2026-05-01', to: '2026-06-01' } };
  const op: ReserveOp = {
    kind: 'reserve',
    id: 'capped',
    walletId: 'w',
    vendor: 'b',
    amountNano: sc.reserve,
    callId: 'capped',
    keyId: KEY,
    createdAt: T0,
    expiresAt: T0,
    cap,
  };
  const r = book.reserve(op);
  return 'undecided' in r ? book.reserveWithFacts(op, r.usableNano, FACTS, []) : r;
}

describe('a draw and a capped reserve of the same key in one batch (policy)', () => {
  it('decide as when each runs in a batch of its own', () => {
    fc.assert(
      fc.property(scenarioArb, (sc) => {
        const start = before(sc);
        if (!start) return;
        const steps = [...sc.draws.keys(), 'reserve' as const];

        // One batch: the standing read once, before the draws.
        const lotsOne = copyLots(start.lots);
        const one = new Book(lotsOne, copyRes(start.res), new Map([[KEY, standingRead(start.res, sc.usedNano)]]));
        const together = steps.map((s) => decide(one, sc, s));

        // One batch per op: the draws' batches carry no cap (no standing read); the reserve's reads it afresh.
        // (Each Book changes the lot and reservation objects it is given: the next batch reads them as written.)
        const lots = copyLots(start.lots);
        const res = copyRes(start.res);
        let used = sc.usedNano;
        const apart = steps.map((s) => {
          const keys = s === 'reserve' ? new Map([[KEY, standingRead(res, used)]]) : new Map<string, KeyStanding>();
          const book = new Book(lots, res, keys);
          const out = decide(book, sc, s);
          if (s !== 'reserve') used += (out as { chargedNano: bigint }).chargedNano;
          return out;
        });

        expect(together).toEqual(apart);
        expect(lotsOne.map((l) => [l.avail, l.reserved])).toEqual(lots.map((l) => [l.avail, l.reserved]));
      }),
      { numRuns: 1_000 },
    );
  });

  it('a draw that takes the key’s hold into its use leaves the standing a capped reserve sees as a fresh read would', () => {
    // The case in words: 10,000 cap, 2,000 used, 6,000 held; a draw charges 4,000 of the hold. A fresh read:
    // used 6,000, held 2,000, so 2,000 is left and a reserve of 2,000 fits (before the fix: refused, 0 left).
    const lots: LotState[] = [{ id: 'lot0', walletId: 'w', seq: 0n, vendors: null, avail: 20_000n, reserved: 0n }];
    const res = new Map<string, ResState>();
    const standing: KeyStanding = { usedNano: 2_000n, heldNano: 0n };
    const book = new Book(lots, res, new Map([[KEY, standing]]));
    const cap: KeyCap = { limitNano: 10_000n, days: { from: '2026-05-01', to: '2026-06-01' } };
    const op = (id: string, amountNano: bigint): ReserveOp => ({
      kind: 'reserve',
      id,
      walletId: 'w',
      vendor: 'b',
      amountNano,
      callId: id,
      keyId: KEY,
      createdAt: T0,
      expiresAt: T0,
      cap,
    });
    expect(book.reserve(op('lease', 6_000n))).toMatchObject({ ok: true });
    expect(book.finish({ kind: 'draw', id: 'lease', actualNano: 4_000n, drawId: 'd' }, T0)).toMatchObject({ chargedNano: 4_000n });
    expect(standing).toEqual({ usedNano: 6_000n, heldNano: 2_000n });
    expect(book.reserve(op('next', 2_000n))).toMatchObject({ ok: true });
    expect(book.reserve(op('more', 1n))).toEqual({
      ok: false,
      reason: 'key_limit',
      availableNano: 0n,
      keyUsedNano: 6_000n,
      keyHeldNano: 4_000n,
    });
  });
});
