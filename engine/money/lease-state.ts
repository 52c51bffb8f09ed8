// A budget lease as a process keeps it in memory (engine/money/leases.ts), and the sums its decisions read.
import type { Reservation } from './types.ts';

export interface Lease {
  reservation: Reservation;
  walletId: string;
  vendor: string;
  granted: bigint;
  /** What draws took (or will take) out of the hold, as decided in memory. */
  spent: bigint;
  /** What the calls admitted on it and not yet finished hold. */
  inFlight: bigint;
  lastUsedMs: number;
  open: boolean;
  /** Draws decided and not yet written. */
  pending: Set<Promise<unknown>>;
}

/** What this process's leases hold and owe, for /metrics. */
export interface LeaseStats {
  /** Leases held (open or being returned). */
  leases: number;
  /** Leases admitting calls (the others are spent, idle or asked back, and go back once their calls end). */
  open: number;
  /** Granted and not yet drawn, all leases (nano-USD). */
  unspentNano: bigint;
  /** Draws decided and not yet written: what a SIGKILL now would leave uncharged. */
  pendingDraws: number;
  /** Calls admitted on a lease, and calls that asked for one and took the exact path, since start. */
  admitted: number;
  missed: number;
}

export interface LeaseHold {
  readonly lease: Lease;
  readonly amountNano: bigint;
}

/** What the lease holds for no call in flight and no draw decided: what it can still admit. */
export const free = (l: Lease): bigint => l.granted - l.spent - l.inFlight;
/** Too little left to be worth admitting on (the refill ahead of need has asked for the next one by then). */
export const spentOut = (l: Lease): boolean => free(l) <= 0n || (l.granted - l.spent) * 8n < l.granted;
export const openFree = (list: readonly Lease[]): bigint => list.reduce((a, l) => (l.open && free(l) > 0n ? a + free(l) : a), 0n);
