// A budget lease as a process keeps it in memory (engine/money/leases.ts), and the sums its decisions read.
import { addCount } from '../core/counts.ts';
import type { KeyCap, Reservation } from './types.ts';

/** A lease of a key's monthly allowance too: its reservation carries the key's id and cap, so every process counts it against the cap. */
export interface LeaseKey {
  keyId: string;
  cap: KeyCap;
  /** What the key's month still leaves: its limit less its finished use and what its holds hold. */
  roomNano: () => Promise<bigint>;
}

export interface LeasePair {
  walletId: string;
  vendor: string;
  key?: LeaseKey | undefined;
}

/** The map key of a pair's leases; a key's leases are apart from its wallet's, and from its own under another limit. */
export const pairKey = (p: LeasePair): string =>
  `${p.walletId}\u0000${p.vendor}${p.key ? `\u0000${p.key.keyId}\u0000${p.key.cap.limitNano}` : ''}`;
/** Whether the pair of a map key (pairKey) is of the wallet. */
export const ofWallet = (pairMapKey: string, walletId: string): boolean => pairMapKey.startsWith(`${walletId}\u0000`);

export interface Lease extends LeasePair {
  reservation: Reservation;
  granted: bigint;
  /** What draws took (or will take) out of the hold, as decided in memory. */
  spent: bigint;
  /** What the calls admitted on it and not yet finished hold. */
  inFlight: bigint;
  /** The same, per calling key: a key's and its class's limits count their calls on a lease (in-flight.ts tells it). */
  inFlightByKey: Map<string, bigint>;
  /** Changes of the two above so far: the in-flight teller writes a lease's figures again only when this moved. */
  inFlightChanges: number;
  lastUsedMs: number;
  open: boolean;
  /** Draws decided and not yet written. */
  pending: Set<Promise<unknown>>;
  /** Ends its renewals (renewals.ts), once it is released. */
  stopRenewing: () => void;
}

/** What this process's leases hold and owe, for /metrics. */
export interface LeaseStats {
  /** Open or being returned. */
  leases: number;
  /** Still admitting calls; the others go back once their calls end. */
  open: number;
  /** Granted and not yet drawn, all leases (nano-USD). */
  unspentNano: bigint;
  /** What the calls admitted on leases and not yet finished hold (nano-USD). */
  inFlightNano: bigint;
  /** Draws decided and not yet written: what a SIGKILL now would leave uncharged. */
  pendingDraws: number;
  /** Calls admitted on a lease, and calls that asked for one and took the exact path, since start. */
  admitted: number;
  missed: number;
}

export interface LeaseHold {
  readonly lease: Lease;
  readonly amountNano: bigint;
  /** The calling key, when the caller said. */
  readonly keyId?: string | undefined;
  /** Its number among the calls the process admitted on leases. */
  readonly seq: number;
}

/** Counts a call's hold on the lease and its key (a negative `n` takes it off). */
export function addInFlight(l: Lease, keyId: string | undefined, n: bigint): void {
  l.inFlight += n;
  l.inFlightChanges++;
  if (keyId !== undefined) addCount(l.inFlightByKey, keyId, n);
}

/** What the lease holds for no call in flight and no draw decided: what it can still admit. */
export const free = (l: Lease): bigint => l.granted - l.spent - l.inFlight;
/** Past the soonest expiry of its lots, on the ledger's clock: it admits nothing more (docs/money.md, "Lots that expire"). */
export const lapsed = (l: Lease, now: Date): boolean =>
  l.reservation.lots.some((lot) => lot.expiresAt != null && lot.expiresAt.getTime() <= now.getTime());
/** Too little left to be worth admitting on (the refill ahead of need has asked for the next one by then), or lapsed. */
export const spentOut = (l: Lease, now: Date): boolean => free(l) <= 0n || (l.granted - l.spent) * 8n < l.granted || lapsed(l, now);
export const admits = (l: Lease, amountNano: bigint, now: Date): boolean => l.open && free(l) >= amountNano && !lapsed(l, now);
/** What the leases hold for no call in flight and no draw decided, together. */
export const freeSum = (list: readonly Lease[]): bigint => list.reduce((a, l) => (free(l) > 0n ? a + free(l) : a), 0n);
