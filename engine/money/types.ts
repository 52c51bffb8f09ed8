// The ledger's shapes, apart from any behaviour so that the rooms calling the ledger, its batcher and its pure
// decisions (policy.ts) share them without importing each other.

import type { ChargeRows } from '../db/charge-rows.ts';
import type { Queryable } from '../db/db.ts';
import type { KeyDays } from '../keys/index.ts';

export type { ChargeRows } from '../db/charge-rows.ts';

/**
 * A charge callback: what a charge writes in its own transaction given as code run for this charge alone,
 * where charge rows (db/charge-rows.ts) are written together with the batch's other charges' rows of the same
 * writer. Its second argument is what the charge charged.
 */
export type ChargeCallback = (tx: Queryable, chargedNano: bigint) => Promise<void>;

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

/** A reserve refused because the key's cap would be passed; nothing was held. */
export interface KeyCapRefusal {
  ok: false;
  reason: 'key_limit';
  /** What the cap still leaves for a call: limit − used − held, never below 0. */
  availableNano: bigint;
  /** The key's finished use the cap counts. */
  keyUsedNano: bigint;
  /** What the key's calls still in flight hold. */
  keyHeldNano: bigint;
  /** Set when the key's group is what the reserve does not fit (its figures as the batch counted them). */
  group?: GroupFigures & { limitNano: bigint };
}

export type ReserveResult =
  | { ok: true; reservation: Reservation }
  | { ok: false; reason: 'insufficient_credit' | 'not_in_plan'; availableNano: bigint }
  | KeyCapRefusal;

/**
 * A cap on what one key's calls may use together (its monthly limit), checked in the reservation's own
 * transaction: the reserve is refused (`key_limit`) when the key's finished use, plus what its reservations
 * still held hold, plus this amount would pass `limitNano`. Counting the holds is what keeps calls sent at
 * the same moment from passing the cap together; the lock is what keeps two processes from doing so.
 */
export interface KeyCap {
  limitNano: bigint;
  /**
   * The Korean days whose finished use the cap counts (its month). Every capped reserve of the key locks the key
   * (keys' lockKeys) before it reads the key's use over them and its holds in one snapshot (readKeyStandings), and
   * keeps the lock until its own hold is committed, so capped reserves of one key are decided one after another,
   * in any process.
   */
  days: KeyDays;
  /** The key's group's cap (a class's monthly limit on its keys' sum), checked beside the key's own. */
  group?: GroupCap;
}

/**
 * A cap on what a group of keys may use together, checked in the reservation's transaction like a KeyCap:
 * `lock` locks the group (after the keys) and reads its limit as it is now (null: none), its keys'
 * finished use and holds in one snapshot, and its keys (engine/keys/group-quota.ts; money/group-caps.ts).
 */
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
  /** Vendor letter of the model called ('a' … 'e'). */
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

/** Where money's code logs (the app's log, read at each use where it is given as a function). */
export interface MoneyLog {
  warn(o: object, m: string): void;
  error(o: object, m: string): void;
}

/** NOTIFY channel carrying a wallet id whenever its owner changes. */
export const WALLET_CHANGED_CHANNEL = 'gateway_wallet_changed';

/** The call id of a budget lease's reservation begins with this (engine/money/leases.ts). */
export const LEASE_CALL_PREFIX = 'lease:';

export interface LotBalance {
  id: string;
  walletId: string;
  /** null: serves every vendor. */
  vendors: string[] | null;
  grantedNano: bigint;
  availableNano: bigint;
  reservedNano: bigint;
  createdAt: Date;
  /** From this instant its remainder is not spendable and leaves as an expiry (lot-expiry.ts); null: never. */
  expiresAt: Date | null;
  /** What has left it as expiries so far. */
  expiredNano: bigint;
}

export interface WalletBalance {
  walletId: string;
  availableNano: bigint;
  reservedNano: bigint;
  lots: LotBalance[];
}

export interface Wallet {
  id: string;
  /** The operator's name for it (a school's name); null when unnamed. */
  name: string | null;
  ownerId: string;
  splitsUsage: boolean;
  keySlots: number;
  createdAt: Date;
}

export interface JournalSum {
  toppedUpNano: bigint;
  reservedTotalNano: bigint;
  chargedNano: bigint;
  releasedNano: bigint;
  /** What left the lots as expiries (lot-expiry.ts). */
  expiredNano: bigint;
  /** Σ top_up − Σ reserve + Σ release − Σ expire: must equal balance().availableNano. */
  availableNano: bigint;
  /** Σ reserve − Σ settle − Σ release: must equal balance().reservedNano. */
  reservedNano: bigint;
  /** The same per lot. */
  lots: { lotId: string; availableNano: bigint; reservedNano: bigint }[];
}

/** A sweep's failure: of one reservation's expiry (`expire` names it), or of the sweep as a whole. */
export type SweepErrorHandler = (err: unknown, expire?: { reservationId: string; walletId: string }) => void;

interface CreateWalletInput {
  id?: string;
  /** Whole credits for a first, unrestricted lot (0 or omitted: no lot). */
  credits?: number | bigint;
  splitsUsage?: boolean | undefined;
  keySlots?: number | undefined;
  /** Default: a fresh `usr_…` id. */
  ownerId?: string | undefined;
  /** The operator's name for the wallet; default: unnamed. */
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
  /** When the lot expires (must be after the top-up's instant); null/omitted: never. */
  expiresAt?: Date | null;
  /** More to write in the top-up's own transaction once the lot exists (its audit record). */
  beside?: ((tx: Queryable, lot: LotBalance) => Promise<void>) | undefined;
}

export interface Ledger {
  /** This process's owner id, written on its reservations. */
  readonly owner: string;
  createWallet(input?: CreateWalletInput): Promise<Wallet & { lot: LotBalance | null }>;
  getWallet(walletId: string): Promise<Wallet | null>;
  /**
   * Changes the wallet owner. Throws errors.notFound when the wallet does not exist. Afterwards sends
   * NOTIFY on WALLET_CHANGED_CHANNEL with the wallet id, so other processes drop cached key state.
   * `beside` runs in the change's own transaction when the owner really changes (its audit record).
   */
  setOwner(walletId: string, ownerId: string, beside?: (tx: Queryable, previousOwnerId: string) => Promise<void>): Promise<Wallet>;
  /** Adds a credit lot. Throws errors.notFound / errors.invalidRequest. */
  topUp(walletId: string, input: TopUpInput): Promise<LotBalance>;
  /** Throws errors.notFound when the wallet does not exist. */
  balance(walletId: string): Promise<WalletBalance>;
  /** Available nano the wallet can spend on this vendor. */
  usableNano(walletId: string, vendor: string): Promise<bigint>;
  /** False when the vendor is plan-restricted and no lot of the wallet could ever serve it (see reserve). */
  planAllows(walletId: string, vendor: string): Promise<boolean>;
  reserve(req: ReserveRequest): Promise<ReserveResult>;
  /**
   * Charges `actualNano` and releases the rest. `rows` (charge rows, or a charge callback) are written inside
   * the same transaction when this settle finishes the reservation (not on a repeat), with what it charged
   * (zero included): the call's usage record and its rollup row (which the key's quotas sum) commit together with the charge.
   */
  settle(reservation: Reservation | string, actualNano: bigint, rows?: ChargeRows | ChargeCallback): Promise<SettleResult>;
  /**
   * Charges `amountNano` out of a held reservation and leaves it held with the rest (a budget lease paying
   * one call), once per `drawId`; past what it holds, or once it is no longer held, from available balance as
   * far as it goes. `rows` are written in the same transaction, with what was charged, unless it is a repeat.
   * `holdAtMostNano` caps what it takes of the hold; `firstTry` says no earlier write of it can have committed (see FinishOp).
   */
  draw(
    reservation: Reservation | string,
    amountNano: bigint,
    drawId: string,
    rows?: ChargeRows | ChargeCallback,
    opts?: { holdAtMostNano?: bigint | undefined; firstTry?: boolean | undefined },
  ): Promise<SettleResult>;
  release(reservation: Reservation | string): Promise<ReleaseResult>;
  /** Gives back up to `releaseNano` of what a held reservation holds; it stays held with the rest (see FinishOp). */
  trim(reservation: Reservation, releaseNano: bigint): Promise<{ releasedNano: bigint }>;
  /** Moves a held reservation's expiry (long video jobs). False when it is no longer held. */
  extend(reservation: Reservation | string, expiresAt: Date): Promise<boolean>;
  /**
   * Says what the calls admitted on each budget lease hold now (`reservations.in_flight_nano`), in one
   * statement, so every process's views can tell the lease's money a call holds from the rest. A lease no
   * longer held is left as it is.
   */
  noteInFlight(leases: readonly { reservationId: string; inFlightNano: bigint }[]): Promise<void>;
  /**
   * Releases held reservations whose expiry passed (their process died). Returns how many. One that fails to
   * expire goes to `onError` (default: the ledger's log) and the others are still swept.
   */
  sweepExpired(now?: Date, onError?: SweepErrorHandler): Promise<number>;
  /** The journal's sums, to check they add up to the balance columns. */
  journalSum(walletId: string): Promise<JournalSum>;
}

// ---------------------------------------------------------------------------------------------------
// The money moves the ledger hands to the batcher.

/** A reservation to make; its id is generated at submission and stays the same on retries. */
export type ReserveOp = { kind: 'reserve' } & Omit<Reservation, 'owner' | 'lots'> & { cap?: KeyCap | undefined };

export interface FinishOp {
  /**
   * draw: charges `actualNano` out of the reservation without finishing it (a process's budget lease pays
   * one call); charged at most once per `drawId`, from what the reservation holds, then (beyond it, or
   * when it is no longer held) from available balance as far as it goes.
   * trim: gives back up to `releaseNano` of what a held reservation holds, which stays held with the rest (a
   * lease asked back while calls admitted on it still run keeps only what they and its unwritten draws need).
   */
  kind: 'settle' | 'release' | 'expire' | 'draw' | 'trim';
  id: string;
  /** draw: the paying call's id; a draw repeated with the same id charges nothing more. */
  drawId?: string;
  /**
   * draw: when the call drew (the moment its charge was decided), written on its draw row. The batch that
   * writes it runs later; the row says when the call was paid, and since draws are written in the order they
   * were drawn, it also says which calls a crash can have lost: only those drawn after the newest row.
   */
  drawnAt?: Date;
  /**
   * draw: takes at most this much of what the reservation holds, the rest of the charge from available balance
   * (a call charged past its lease leaves the lease's other calls in flight what it holds for them).
   */
  holdAtMostNano?: bigint | undefined;
  /**
   * draw: no earlier write of this draw can have committed (its first try), so the batch does not look for it among
   * the charges already written; a retry after an unclear commit, or a charge replayed from the spool, does.
   */
  firstTry?: boolean | undefined;
  /**
   * The reservation's wallet as the caller knows it (its lots are locked up front; a wrong one costs a
   * retry), or null: looked up inside the batch.
   */
  walletId: string | null;
  /** settle, draw: the amount to charge. 0 for the other kinds (a trim's amount is `releaseNano`). */
  actualNano: bigint;
  /** trim: the most to give back of what the reservation holds. */
  releaseNano?: bigint;
  /** expire: only when the reservation's expiry is not after this instant (it may have been extended). */
  expireBefore?: Date | undefined;
  /** settle, draw: the charge rows (or charge callback) written in the charge's transaction. */
  rows?: ChargeRows | ChargeCallback | undefined;
}

export interface FinishOutcome {
  /** What this move charged (a settle that was a no-op on a finished reservation: the first settle's charge). */
  chargedNano: bigint;
  /** Part of the cost the lots could not cover (not charged). 0 normally. */
  shortfallNano: bigint;
  /** True when the reservation was already settled or released (or the draw already written): nothing changed. */
  alreadyFinished: boolean;
  releasedNano: bigint;
  /** This op moved the reservation out of 'held' (or settled an expired one). */
  finished: boolean;
}
