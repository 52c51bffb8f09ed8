// The ledger's shapes, apart from any behaviour so that the rooms calling the ledger, its batcher and its pure
// decisions (policy.ts) share them without importing each other.

import type { ChargeRows } from '../db/charge-rows.ts';
import type { Queryable } from '../db/db.ts';
import type { KeyDays } from '../keys/index.ts';

export interface ReservationLot {
  lotId: string;
  amountNano: bigint;
  /** The lot's expiry, as the reserve saw it (a lease closes at its lots' soonest); null or absent: none. */
  expiresAt?: Date | null;
}

export interface Reservation {
  id: string;
  walletId: string;
  vendor: string;
  amountNano: bigint;
  callId: string;
  keyId: string | null;
  owner: string;
  createdAt: Date;
  expiresAt: Date;
  lots: ReservationLot[];
}

/** What a lease's calls hold, as its process tells it. */
export interface InFlightFigures {
  reservationId: string;
  inFlightNano: bigint;
  /** Per calling key; absent or empty: no key said. */
  byKey?: ReadonlyMap<string, bigint>;
}

/** A reserve refused because the key's cap would be passed; nothing was held. */
export interface KeyCapRefusal {
  ok: false;
  reason: 'key_limit';
  /** What the cap still leaves for a call: limit − used − held, never below 0. */
  availableNano: bigint;
  /** The key's finished use the cap counts; `keyHeldNano`: what its calls still in flight hold. */
  keyUsedNano: bigint;
  keyHeldNano: bigint;
  /** Set when the key's group is what the reserve does not fit (its figures as the batch counted them). */
  group?: GroupFigures & { limitNano: bigint };
}

export type ReserveResult =
  | { ok: true; reservation: Reservation }
  | { ok: false; reason: 'insufficient_credit' | 'not_in_plan'; availableNano: bigint }
  | KeyCapRefusal;

/** A key's monthly limit, checked under the key's lock (docs/decisions/ledger-decisions.md, "The key cap"). */
export interface KeyCap {
  limitNano: bigint;
  /** The Korean days whose use the cap counts (its month), read under the key's lock held until the hold commits. */
  days: KeyDays;
  /** The key's group's cap (a class's monthly limit on its keys' sum), checked beside the key's own. */
  group?: GroupCap;
}

/** A class's limit on its keys' sum, checked like a KeyCap: `lock` locks the group after the keys and reads its figures. */
export interface GroupCap {
  groupId: string;
  lock(tx: Queryable): Promise<Omit<GroupFigures, 'groupId'> & { keyIds: string[] }>;
}

/** A key group's figures as a batch counts them: its limit (null: none), its keys' finished use and holds. */
export interface GroupFigures {
  groupId: string;
  limitNano: bigint | null;
  usedNano: bigint;
  heldNano: bigint;
}

export interface ReserveRequest {
  walletId: string;
  vendor: string;
  /** The most the call can cost. */
  amountNano: bigint;
  callId: string;
  keyId?: string | null | undefined;
  /** Default: now + reservationTtlMs. */
  expiresAt?: Date | undefined;
  /** The calling key's cap (needs `keyId`); none: only the wallet's balance limits the reserve. */
  cap?: KeyCap | undefined;
}

type SettleResult = Pick<FinishOutcome, 'chargedNano' | 'shortfallNano' | 'alreadyFinished'>;
type ReleaseResult = Pick<FinishOutcome, 'releasedNano' | 'alreadyFinished'>;

export interface MoneyLog {
  warn(o: object, m: string): void;
  error(o: object, m: string): void;
}

export { LEASE_CALL_PREFIX } from '../core/money.ts';

export interface LotBalance {
  id: string;
  walletId: string;
  /** null: serves every vendor. */
  vendors: string[] | null;
  grantedNano: bigint;
  availableNano: bigint;
  reservedNano: bigint;
  createdAt: Date;
  /** From this instant its remainder leaves as an expiry (lot-expiry.ts); null: never. */
  expiresAt: Date | null;
  expiredNano: bigint;
  /** The operator's name for it ("2026 2학기"); null: none. */
  label: string | null;
}

export interface WalletBalance {
  walletId: string;
  availableNano: bigint;
  reservedNano: bigint;
  lots: LotBalance[];
}

export interface Wallet {
  id: string;
  /** The operator's name for it (a school's); null when unnamed. */
  name: string | null;
  ownerId: string;
  splitsUsage: boolean;
  keySlots: number;
  createdAt: Date;
}

/** A sweep's failure: of one reservation's expiry (`expire` names it), or of the sweep as a whole. */
export type SweepErrorHandler = (err: unknown, expire?: { reservationId: string; walletId: string }) => void;

interface CreateWalletInput {
  id?: string;
  /** Whole credits for a first, unrestricted lot (0 or omitted: no lot). */
  credits?: number | bigint;
  splitsUsage?: boolean | undefined;
  keySlots?: number | undefined;
  ownerId?: string | undefined;
  name?: string | null;
  /** More to write in the creation's own transaction once the first lot exists (its audit record). */
  beside?: TopUpInput['beside'];
}

export interface TopUpInput {
  /** Exactly one of nano and credits. */
  nano?: bigint;
  credits?: number | bigint;
  /** Vendor letters the lot is restricted to; null/omitted: unrestricted. */
  vendors?: string[] | null;
  /** After the top-up's instant; null/omitted: never. */
  expiresAt?: Date | null;
  /** The lot's name, checked by the caller (admin/body.ts labelFrom); null/omitted: none. */
  label?: string | null;
  /** More to write in the top-up's own transaction once the lot exists (its audit record). */
  beside?: ((tx: Queryable, lot: LotBalance) => Promise<void>) | undefined;
}

export interface Ledger {
  /** This process's owner id, written on its reservations. */
  readonly owner: string;
  createWallet(input?: CreateWalletInput): Promise<Wallet & { lot: LotBalance | null }>;
  getWallet(walletId: string): Promise<Wallet | null>;
  /** Changes the wallet owner; `beside` runs in its transaction when the owner really changes (its audit record). */
  setOwner(walletId: string, ownerId: string, beside?: (tx: Queryable, previousOwnerId: string) => Promise<void>): Promise<Wallet>;
  /** Adds a credit lot. Throws errors.notFound / errors.invalidRequest. */
  topUp(walletId: string, input: TopUpInput): Promise<LotBalance>;
  /** Throws errors.notFound when the wallet does not exist. */
  balance(walletId: string): Promise<WalletBalance>;
  usableNano(walletId: string, vendor: string): Promise<bigint>;
  /** False when the vendor is plan-restricted and no lot of the wallet could ever serve it (see reserve). */
  planAllows(walletId: string, vendor: string): Promise<boolean>;
  reserve(req: ReserveRequest): Promise<ReserveResult>;
  /** Charges `actualNano` and releases the rest; `rows` commit with the charge, and not on a repeat. */
  settle(reservation: Reservation | string, actualNano: bigint, rows?: ChargeRows): Promise<SettleResult>;
  /**
   * Charges `amountNano` out of a held reservation (a lease paying one call) once per `drawId`, leaving it held with
   * the rest; past its hold, from available balance as far as it goes. Options: see FinishOp.
   */
  draw(
    reservation: Reservation | string,
    amountNano: bigint,
    drawId: string,
    rows?: ChargeRows,
    opts?: { holdAtMostNano?: bigint | undefined; firstTry?: FirstTry | undefined },
  ): Promise<SettleResult>;
  release(reservation: Reservation | string): Promise<ReleaseResult>;
  /** Gives back up to `releaseNano` of what a held reservation holds; it stays held with the rest (see FinishOp). */
  trim(reservation: Reservation, releaseNano: bigint): Promise<{ releasedNano: bigint }>;
  /** Moves held reservations' expiry (leases, long video jobs) in one statement: the ids of those still held. */
  extendAll(ids: readonly string[], expiresAt: Date): Promise<Set<string>>;
  /** Marks held reservations as owed by charges kept on disk (the sweeper then leaves them for KEPT_HOLD_MS), or unmarks them. */
  keepHeld(ids: readonly string[], kept: boolean): Promise<void>;
  /** Writes what each lease's calls hold, in all and per key, for every process's views and limits (docs/money.md). */
  noteInFlight(leases: readonly InFlightFigures[]): Promise<void>;
  /** Releases held reservations whose expiry passed (their process died); returns how many. */
  sweepExpired(now?: Date, onError?: SweepErrorHandler): Promise<number>;
}

/**
 * Asked when a batch decides whether to look for a draw's earlier write: true only for the charge writer's first try
 * whose intent is not yet kept in the spool, where no other process can have replayed it (charge-writer.ts).
 */
export type FirstTry = () => boolean;

/** A reservation to make; its id is made at submission and kept on retries. */
export type ReserveOp = { kind: 'reserve' } & Omit<Reservation, 'owner' | 'lots'> & { cap?: KeyCap | undefined };

export interface FinishOp {
  /** draw: charges one call out of a held lease, once per `drawId`; trim: gives back part of a hold, which stays held. */
  kind: 'settle' | 'release' | 'expire' | 'draw' | 'trim';
  id: string;
  /** draw: the paying call's id. */
  drawId?: string;
  /** draw: when its charge was decided (the batch writing it runs later), written on its rows. */
  drawnAt?: Date;
  /** draw: the most it takes of the hold (a call past its lease leaves the lease's other calls their part). */
  holdAtMostNano?: bigint | undefined;
  /** draw: true while no earlier write of it can have committed, so the batch need not look for it among those written. */
  firstTry?: FirstTry | undefined;
  /** The reservation's wallet as the caller knows it (a wrong one costs a retry), or null: looked up in the batch. */
  walletId: string | null;
  /** settle, draw: the amount to charge; 0 for the other kinds. */
  actualNano: bigint;
  /** trim: the most to give back of what the reservation holds. */
  releaseNano?: bigint;
  /** expire: only if the reservation's expiry is not after this (it may have been extended). */
  expireBefore?: Date | undefined;
  /** settle, draw: the charge rows written in the charge's transaction. */
  rows?: ChargeRows | undefined;
}

export interface FinishOutcome {
  /** What this move charged (a repeated settle: the first one's charge). */
  chargedNano: bigint;
  /** Part of the cost the lots could not cover (not charged). */
  shortfallNano: bigint;
  /** The reservation was already finished (or the draw written): nothing changed. */
  alreadyFinished: boolean;
  releasedNano: bigint;
  /** This op moved the reservation out of 'held' (or settled an expired one). */
  finished: boolean;
}
