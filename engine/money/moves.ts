// What one batch's decisions move, recorded as they are made for one write at the end (policy.ts decides,
// batch-sql.ts writes).
import { assertMoney } from './invariants.ts';
import type { ReserveOp } from './types.ts';

/** A lot as the batch locked it; the Book changes `avail` and `reserved` as it decides. */
export interface LotState {
  id: string;
  walletId: string;
  seq: bigint;
  /** null: serves every vendor. */
  vendors: string[] | null;
  avail: bigint;
  reserved: bigint;
  /** From this instant it pays for nothing new (lot-expiry.ts); null or absent: never. */
  expiresAt?: Date | null;
}

export type ReservationState = 'held' | 'settled' | 'released' | 'expired';

type JournalKind = 'reserve' | 'settle' | 'release' | 'expire';

interface JournalEntry {
  walletId: string;
  lotId: string;
  /** null: an expiry, which is the lot's alone. */
  reservationId: string | null;
  kind: JournalKind;
  amount: bigint;
  at: Date;
}

export class Moves {
  readonly newRes: ReserveOp[] = [];
  readonly newResLots: { reservationId: string; lotId: string; amount: bigint }[] = [];
  readonly lotDelta = new Map<string, { avail: bigint; reserved: bigint }>();
  readonly journal: JournalEntry[] = [];
  private readonly journalIndex = new Map<string, JournalEntry>();
  /** Reservations whose row changes; `at` null: drawn from and still held, `amount` being what it still holds. */
  readonly finished = new Map<string, { state: ReservationState; charged: bigint; at: Date | null; amount?: bigint | undefined }>();
  /** What draws took off a reservation's hold on a lot (`reservation_lots`). */
  readonly heldDelta: { reservationId: string; lotId: string; amount: bigint }[] = [];
  /** The draws made, by their id, so a repeated draw is recognised. */
  readonly draws: { drawId: string; reservationId: string; amount: bigint; at: Date }[] = [];

  /** Moves `n` on a lot as the journal `kind` says; a lot going negative is a bug in the decisions and throws. */
  move(lot: LotState, reservationId: string | null, kind: JournalKind, n: bigint, at: Date): void {
    if (n <= 0n) return;
    // An expiry takes money out of available for good; the others move it between available and reserved.
    const avail = kind === 'reserve' || kind === 'expire' ? -n : kind === 'release' ? n : 0n;
    const reserved = kind === 'reserve' ? n : kind === 'expire' ? 0n : -n;
    lot.avail += avail;
    lot.reserved += reserved;
    assertMoney(lot.avail >= 0n && lot.reserved >= 0n, () => `ledger: lot ${lot.id} would go negative`);
    const delta = this.lotDelta.get(lot.id) ?? { avail: 0n, reserved: 0n };
    delta.avail += avail;
    delta.reserved += reserved;
    this.lotDelta.set(lot.id, delta);
    // One journal row per lot, reservation and kind per batch (docs/money.md, "What a call writes"): the sums are the same.
    const key = `${lot.id}\u0000${reservationId}\u0000${kind}`;
    const same = this.journalIndex.get(key);
    if (same) same.amount += n;
    else {
      const entry = { walletId: lot.walletId, lotId: lot.id, reservationId, kind, amount: n, at };
      this.journal.push(entry);
      this.journalIndex.set(key, entry);
    }
  }

  get empty(): boolean {
    return this.newRes.length === 0 && this.journal.length === 0 && this.finished.size === 0 && this.draws.length === 0;
  }
}
