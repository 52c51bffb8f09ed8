// The ledger's decisions, kept pure so a batch decides exactly as if each move ran alone and property tests can
// drive a Book directly. The rules: docs/decisions/ledger-decisions.md and docs/money.md.
import { errors } from '../core/errors.ts';
import { assertMoney } from './invariants.ts';
import { drawOrder, lotExpired, lotServes } from './lot-order.ts';
import { type LotState, Moves, type ReservationState } from './moves.ts';
import type { FinishOp, FinishOutcome, GroupFigures, KeyCapRefusal, ReservationLot, ReserveOp } from './types.ts';

export type { LotState, ReservationState };

/** A reservation as the batch locked it. */
export interface ResState {
  id: string;
  walletId: string;
  /** null: made outside a key's call. */
  keyId: string | null;
  vendor: string;
  amount: bigint;
  state: ReservationState;
  charged: bigint;
  expiresAt: Date;
  /** lot id → amount the reservation holds on it */
  held: Map<string, bigint>;
  /** A lease's records not yet applied (lease-records.ts): charged from its hold when it ends. */
  owed: bigint;
}

/** A capped key as the batch read it under its lock; the Book keeps it current as it decides. */
export interface KeyStanding {
  /** Finished use; `heldNano` is what the key's held reservations hold. */
  usedNano: bigint;
  heldNano: bigint;
  /** When the key's cap carries a group: its figures, shared by its keys (group-caps.ts) and counted with each key's. */
  readonly group?: GroupFigures;
}

/** null when the reserve fits its key's cap and its group's, or carries no cap. */
function keyCapRefusal(op: Pick<ReserveOp, 'amountNano' | 'cap'>, standing: KeyStanding | undefined): KeyCapRefusal | null {
  if (!op.cap || !standing) return null;
  const g = standing.group;
  const groupLeft = g && g.limitNano !== null ? g.limitNano - g.usedNano - g.heldNano : null;
  const keyLeft = op.cap.limitNano - standing.usedNano - standing.heldNano;
  if (op.amountNano <= keyLeft && (groupLeft === null || op.amountNano <= groupLeft)) return null;
  const byGroup = groupLeft !== null && groupLeft < op.amountNano && groupLeft <= keyLeft;
  const left = byGroup ? groupLeft : keyLeft;
  return {
    ok: false,
    reason: 'key_limit',
    availableNano: left > 0n ? left : 0n,
    keyUsedNano: standing.usedNano,
    keyHeldNano: standing.heldNano,
    ...(byGroup ? { group: { ...g!, limitNano: g!.limitNano! } } : {}),
  };
}

/** What the wallet's rows say, read for refusals only. */
export interface WalletFacts {
  exists: boolean;
  anyLot: boolean;
  usableLot: boolean;
}

/** The plan rule: false when the vendor is plan-restricted and the wallet has lots, none of which could ever serve it. */
export const planAllows = (planVendors: readonly string[], vendor: string, facts: Pick<WalletFacts, 'anyLot' | 'usableLot'>): boolean =>
  !planVendors.includes(vendor) || !facts.anyLot || facts.usableLot;

/**
 * Whether a batch looks for the draw's earlier write (docs/decisions/charge-writer.md, "The spool"): every retry, and
 * a first try whose intent was kept in the spool meanwhile, which another process may have replayed.
 */
export const looksForEarlierWrite = (op: FinishOp): boolean => op.kind === 'draw' && op.drawId !== undefined && op.firstTry?.() !== true;

/** Whether finishing a reservation in this state can still move money (else it is a no-op). */
const mayMoveMoney = (state: ReservationState, kind: FinishOp['kind']): boolean =>
  state === 'held' || (state === 'expired' && kind === 'settle') || kind === 'draw';

/** A reserve the Book could not draw: refused, or (amount 0, nothing to draw from) accepted empty. */
interface UndecidedReserve {
  undecided: true;
  /** What the usable lots had available at the reserve's turn. */
  usableNano: bigint;
}

type ReserveDecision =
  | { ok: true; lots: ReservationLot[] }
  | { ok: false; reason: 'insufficient_credit' | 'not_in_plan'; availableNano: bigint };

/** A batch's locked lots and reservations: ops are decided one after another, as if each ran alone, into `moves`. */
export class Book {
  readonly moves = new Moves();
  private readonly ordered: LotState[];
  private readonly lots: Map<string, LotState>;

  /** `keys`: the standing of every key whose cap a reserve of the batch carries. */
  constructor(
    lots: Iterable<LotState>,
    private readonly reservations: Map<string, ResState> = new Map(),
    private readonly keys: ReadonlyMap<string, KeyStanding> = new Map(),
    /** The batch's instant: a lot expired by then pays for nothing new. */
    readonly now: Date = new Date(0),
  ) {
    this.ordered = [...lots].sort(drawOrder);
    this.lots = new Map(this.ordered.map((l) => [l.id, l]));
  }

  /** The wallet's lots that can pay this vendor now, in draw order. */
  private usableLots(walletId: string, vendor: string): LotState[] {
    return this.ordered.filter((l) => l.walletId === walletId && l.avail > 0n && lotServes(l, vendor) && !lotExpired(l, this.now));
  }

  reservation(id: string): ResState | undefined {
    return this.reservations.get(id);
  }

  private standingOf(op: ReserveOp): KeyStanding | undefined {
    if (!op.cap) return undefined;
    const standing = op.keyId === null ? undefined : this.keys.get(op.keyId);
    if (!standing) throw new Error(`ledger: reserve ${op.id} has a key cap, but the batch did not read key ${op.keyId}`);
    return standing;
  }

  /**
   * Draws the reservation from the usable lots in draw order. When they cannot cover it (or there are none) it is
   * left undecided: the answer needs the wallet facts (reserveWithFacts).
   */
  reserve(op: ReserveOp): { ok: true; lots: ReservationLot[] } | UndecidedReserve | KeyCapRefusal {
    const overCap = keyCapRefusal(op, this.standingOf(op));
    if (overCap) return overCap;
    const usable = this.usableLots(op.walletId, op.vendor);
    const total = usable.reduce((a, l) => a + l.avail, 0n);
    if (usable.length === 0 || total < op.amountNano) return { undecided: true, usableNano: total };
    const drawn: ReservationLot[] = [];
    let left = op.amountNano;
    for (const l of usable) {
      if (left <= 0n) break;
      const x = left < l.avail ? left : l.avail;
      assertMoney(
        !lotExpired(l, this.now),
        () => `ledger: reserve ${op.id} would hold on lot ${l.id}, expired at ${l.expiresAt?.toISOString()}`,
      );
      this.moves.move(l, op.id, 'reserve', x, op.createdAt);
      drawn.push(l.expiresAt ? { lotId: l.id, amountNano: x, expiresAt: l.expiresAt } : { lotId: l.id, amountNano: x });
      left -= x;
    }
    this.hold(op, drawn);
    return { ok: true, lots: drawn };
  }

  /** The answer to an undecided reserve. Throws errors.notFound when the wallet does not exist. */
  reserveWithFacts(op: ReserveOp, usableNano: bigint, facts: WalletFacts | undefined, planVendors: readonly string[]): ReserveDecision {
    if (!facts?.exists) throw errors.notFound(`No wallet '${op.walletId}'.`);
    if (!planAllows(planVendors, op.vendor, facts)) return { ok: false, reason: 'not_in_plan', availableNano: 0n };
    if (usableNano < op.amountNano) return { ok: false, reason: 'insufficient_credit', availableNano: usableNano };
    this.hold(op, []); // amount 0 and nothing to draw from: a reservation of nothing
    return { ok: true, lots: [] };
  }

  /** `at` is the instant written on the moves. A reservation the batch did not lock does not exist. */
  finish(op: Omit<FinishOp, 'walletId' | 'firstTry' | 'rows'>, at: Date): FinishOutcome {
    const s = this.reservations.get(op.id);
    if (!s) throw errors.notFound(`No reservation '${op.id}'.`);
    if (op.kind === 'draw') return this.draw(s, op, at);
    if (op.kind === 'trim') return this.trim(s, op.releaseNano ?? 0n, at);
    const noop: FinishOutcome = { chargedNano: s.charged, shortfallNano: 0n, alreadyFinished: true, releasedNano: 0n, finished: false };
    if (!mayMoveMoney(s.state, op.kind)) return noop;
    if (op.kind === 'expire' && op.expireBefore && s.expiresAt > op.expireBefore) return { ...noop, alreadyFinished: false }; // extended meanwhile
    const heldLots = s.state === 'held' ? this.heldLots(s) : [];
    if (s.state === 'held') this.countOnKey(s.keyId, s.owed - s.amount); // what records owe counts as used already
    if (op.kind === 'settle') {
      // Only a call's own hold is settled; records are owed on leases alone, which end by a release or an expiry.
      assertMoney(s.state !== 'held' || s.owed === 0n, () => `ledger: settle of ${s.id}, on which records owe ${s.owed}`);
      return this.settle(s, heldLots, op.actualNano, at);
    }
    const state = op.kind === 'expire' ? 'expired' : 'released';
    // A lease that ends pays what its records owe from its hold, as a settle would, and gives back the rest.
    if (s.state === 'held' && s.owed > 0n) return this.settle(s, heldLots, s.owed, at, state);
    for (const { lot, h } of heldLots) this.moves.move(lot, s.id, 'release', h, at);
    this.finishAs(s, state, s.charged, at); // what draws charged stays charged
    return { chargedNano: 0n, shortfallNano: 0n, alreadyFinished: false, releasedNano: s.amount, finished: true };
  }

  private settle(
    s: ResState,
    heldLots: { lot: LotState; h: bigint }[],
    actualNano: bigint,
    at: Date,
    state: ReservationState = 'settled',
  ): FinishOutcome {
    const actual = actualNano < 0n ? 0n : actualNano;
    let toCharge = actual;
    let released = 0n;
    // 1. from what the reservation holds (restricted lots first), releasing the rest
    for (const { lot, h } of heldLots) {
      const x = toCharge < h ? toCharge : h;
      this.moves.move(lot, s.id, 'settle', x, at);
      this.moves.move(lot, s.id, 'release', h - x, at);
      released += h - x;
      toCharge -= x;
    }
    // 2. the excess from available balance, as far as it goes
    const fromHold = actual - toCharge;
    toCharge -= this.chargeFromAvailable(s, toCharge, at);
    const charged = actual - toCharge;
    // A post takes at most its pending hold; what it charges above it came from available balance as far as it went.
    assertMoney(
      fromHold <= s.amount && charged <= actual,
      () => `ledger: settle of ${s.id} charged ${charged} (${fromHold} of its hold ${s.amount})`,
    );
    // What a lease's records owe is in its key's use already (their rollup rows).
    this.countOnKey(s.keyId, 0n, s.owed > 0n ? 0n : charged);
    this.finishAs(s, state, s.charged + charged, at); // plus what draws charged before, if any
    return { chargedNano: charged, shortfallNano: toCharge, alreadyFinished: false, releasedNano: released, finished: true };
  }

  /** Draw ids already written (read by the batch): a repeat of one charges nothing. */
  readonly drawnBefore = new Set<string>();

  /**
   * Charges from the hold (at most `holdAtMostNano`) and leaves the reservation held with the rest; past that, or
   * once it is no longer held, from available balance as far as it goes.
   */
  private draw(s: ResState, op: Pick<FinishOp, 'actualNano' | 'drawId' | 'drawnAt' | 'holdAtMostNano'>, at: Date): FinishOutcome {
    const { drawId, actualNano: amountNano } = op;
    if (!drawId) throw new Error(`ledger: a draw on ${s.id} needs a draw id`);
    if (this.drawnBefore.has(drawId))
      return { chargedNano: 0n, shortfallNano: 0n, alreadyFinished: true, releasedNano: 0n, finished: false };
    this.drawnBefore.add(drawId);
    let toCharge = amountNano < 0n ? 0n : amountNano;
    let fromHold = 0n;
    const asked = op.holdAtMostNano ?? toCharge;
    const spare = s.amount - s.owed; // what its records owe stays held for them
    const cap = asked < spare ? asked : spare;
    let holdLeft = cap < 0n ? 0n : cap < toCharge ? cap : toCharge;
    for (const { lot, h } of s.state === 'held' ? this.heldLots(s) : []) {
      if (holdLeft <= 0n) break;
      const x = holdLeft < h ? holdLeft : h;
      holdLeft -= x;
      this.moves.move(lot, s.id, 'settle', x, at);
      s.held.set(lot.id, h - x);
      this.moves.heldDelta.push({ reservationId: s.id, lotId: lot.id, amount: x });
      fromHold += x;
      toCharge -= x;
    }
    toCharge -= this.chargeFromAvailable(s, toCharge, at);
    const charged = (amountNano < 0n ? 0n : amountNano) - toCharge;
    this.takeOffHold(s, fromHold);
    s.charged += charged;
    // What it took of the hold leaves the key's holds; all it charged joins the key's use, as a settle's does.
    this.countOnKey(s.keyId, -fromHold, charged);
    this.stillHeld(s);
    this.moves.draws.push({ drawId, reservationId: s.id, amount: charged, at: op.drawnAt ?? at });
    return { chargedNano: charged, shortfallNano: toCharge, alreadyFinished: false, releasedNano: 0n, finished: false };
  }

  /**
   * Gives back part of a hold (it stays held), last lots first: its calls still to be charged draw the others first.
   * Never from a lot past its expiry: what is held there for no call is the expiry pass's to give back, and the rest
   * is its calls' (a process that asks past what it holds, not knowing the pass gave some back, takes none of theirs).
   */
  private trim(s: ResState, amountNano: bigint, at: Date): FinishOutcome {
    const spare = s.amount - s.owed; // what its records owe stays held for them
    const asked = s.state === 'held' && amountNano > 0n ? (amountNano < spare ? amountNano : spare) : 0n;
    let left = asked;
    for (const { lot, h } of left > 0n ? this.heldLots(s).reverse() : []) {
      if (lotExpired(lot, this.now)) continue;
      const x = left < h ? left : h;
      this.moves.move(lot, s.id, 'release', x, at);
      s.held.set(lot.id, h - x);
      this.moves.heldDelta.push({ reservationId: s.id, lotId: lot.id, amount: x });
      left -= x;
      if (left <= 0n) break;
    }
    const released = asked - left;
    if (released === 0n)
      return { chargedNano: 0n, shortfallNano: 0n, alreadyFinished: s.state !== 'held', releasedNano: 0n, finished: false };
    this.takeOffHold(s, released);
    this.countOnKey(s.keyId, -released);
    this.stillHeld(s);
    return { chargedNano: 0n, shortfallNano: 0n, alreadyFinished: false, releasedNano: released, finished: false };
  }

  /** Charges up to `amount` from the available balance of the lots that serve the reservation's vendor; returns what it charged. */
  private chargeFromAvailable(s: ResState, amount: bigint, at: Date): bigint {
    let left = amount;
    for (const lot of left > 0n ? this.usableLots(s.walletId, s.vendor) : []) {
      if (left <= 0n) break;
      const x = left < lot.avail ? left : lot.avail;
      this.moves.move(lot, s.id, 'reserve', x, at);
      this.moves.move(lot, s.id, 'settle', x, at);
      left -= x;
    }
    return amount - left;
  }

  /**
   * Lots holding more than the reservation's amount (a bug, or a row changed by hand) throw here so this op fails
   * alone, not at the database's CHECK, which would fail the whole batch.
   */
  private takeOffHold(s: ResState, n: bigint): void {
    assertMoney(n <= s.amount, () => `ledger: reservation ${s.id} holds ${s.amount}, less than the ${n} taken off its lots`);
    s.amount -= n;
  }

  /** What a held reservation holds, per lot, in draw order. A hold on a lot the batch did not lock is a bug. */
  private heldLots(s: ResState): { lot: LotState; h: bigint }[] {
    const out: { lot: LotState; h: bigint }[] = [];
    let sum = 0n;
    for (const [lotId, h] of s.held) {
      if (h <= 0n) continue;
      const lot = this.lots.get(lotId);
      assertMoney(lot !== undefined, () => `ledger: reservation ${s.id} holds ${h} on lot ${lotId}, which is not live`);
      out.push({ lot, h });
      sum += h;
    }
    assertMoney(sum === s.amount, () => `ledger: reservation ${s.id} holds ${s.amount}, its lots ${sum}`);
    return out.sort((a, b) => drawOrder(a.lot, b.lot));
  }

  private hold(op: ReserveOp, drawn: ReservationLot[]): void {
    this.moves.newRes.push(op);
    for (const d of drawn) this.moves.newResLots.push({ reservationId: op.id, lotId: d.lotId, amount: d.amountNano });
    this.countOnKey(op.keyId, op.amountNano);
    this.reservations.set(op.id, {
      id: op.id,
      walletId: op.walletId,
      keyId: op.keyId,
      vendor: op.vendor,
      amount: op.amountNano,
      state: 'held',
      charged: 0n,
      expiresAt: op.expiresAt,
      held: new Map(drawn.map((d) => [d.lotId, d.amountNano])),
      owed: 0n,
    });
  }

  /** Keeps a capped key's figures current, and its group's, so a capped reserve later in the batch counts what a fresh read would. */
  private countOnKey(keyId: string | null, heldNano: bigint, usedNano = 0n): void {
    const standing = keyId === null ? undefined : this.keys.get(keyId);
    if (!standing) return;
    standing.heldNano += heldNano;
    standing.usedNano += usedNano;
    if (!standing.group) return;
    standing.group.heldNano += heldNano;
    standing.group.usedNano += usedNano;
  }

  /** The row update of a reservation that stays held: what it holds and was charged (a finish's instant kept). */
  private stillHeld(s: ResState): void {
    const prev = this.moves.finished.get(s.id);
    this.moves.finished.set(s.id, { state: s.state, charged: s.charged, at: prev?.at ?? null, amount: s.amount });
  }

  private finishAs(s: ResState, state: ReservationState, charged: bigint, at: Date): void {
    s.state = state;
    s.charged = charged;
    // A draw earlier in the batch changed what it holds: keep that amount in the one row update.
    this.moves.finished.set(s.id, { state, charged, at, amount: this.moves.finished.get(s.id)?.amount });
  }
}

/** Wallets to lock before deciding: of reservations it would move money on, whose lots were not locked (a misnamed wallet). */
export function walletsMissingLocks(
  finishes: readonly Pick<FinishOp, 'kind' | 'id'>[],
  reservations: ReadonlyMap<string, ResState>,
  lockedWallets: ReadonlySet<string>,
): string[] {
  const missing = new Set<string>();
  for (const op of finishes) {
    const r = reservations.get(op.id);
    if (r && !lockedWallets.has(r.walletId) && mayMoveMoney(r.state, op.kind)) missing.add(r.walletId);
  }
  return [...missing];
}
