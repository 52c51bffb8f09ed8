// How big a budget lease is, kept pure (docs/decisions/leases.md, "Sizing").

/** billing.yaml `leases`, in the units the engine uses. */
export interface LeaseSettings {
  sliceSeconds: number;
  minSliceNano: bigint;
  maxShare: number;
  ttlMs: number;
  idleReturnMs: number;
  /** Unwritten draws, at most, in the whole process (leases.ts DEFAULT_MAX_PENDING_DRAWS). */
  maxPendingDraws: number;
}

/** A slice covers at least this many calls like the one that asked for it. */
const CALLS_PER_SLICE = 8;
/** A wallet whose share cannot hold this many such calls is not leased. */
const MIN_CALLS_PER_SHARE = 4;

interface SliceAsk {
  /** What the wallet can spend on the vendor now. */
  usableNano: bigint;
  /** The call that asked for the lease. */
  amountNano: bigint;
  /** The pair's recent spend in this process, nano per second. */
  spendPerSecond: number;
  /** What the calls on the pair's leases, and the calls waiting for this one, hold. */
  heldNano: bigint;
}

/** The slice to lease, or null when the wallet is too small to lease (its calls take the exact path). */
export function sliceFor(ask: SliceAsk, s: LeaseSettings): bigint | null {
  const share = BigInt(Math.floor(Number(ask.usableNano) * s.maxShare));
  if (share < ask.amountNano * BigInt(MIN_CALLS_PER_SHARE)) return null;
  const bySpend = BigInt(Math.ceil(ask.spendPerSecond * s.sliceSeconds));
  const byHolds = (ask.heldNano + ask.amountNano) * 2n;
  const slice = [s.minSliceNano, bySpend, byHolds, ask.amountNano * BigInt(CALLS_PER_SLICE)].reduce((a, b) => (a > b ? a : b));
  return slice > share ? share : slice;
}

/** Spend per pair, nano per second, smoothed over about ten seconds. */
export class SpendRates {
  private readonly rates = new Map<string, { rate: number; atMs: number }>();

  note(key: string, cost: bigint, nowMs: number): void {
    const prev = this.rates.get(key);
    if (!prev) {
      this.rates.set(key, { rate: Number(cost), atMs: nowMs });
      return;
    }
    const dt = Math.max(1, nowMs - prev.atMs) / 1000;
    const weight = Math.min(1, dt / 10);
    this.rates.set(key, { rate: prev.rate * (1 - weight) + (Number(cost) / dt) * weight, atMs: nowMs });
  }

  perSecond(key: string): number {
    return this.rates.get(key)?.rate ?? 0;
  }
}
