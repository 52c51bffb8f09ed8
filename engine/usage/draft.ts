// What a call knows of itself when it settles: the draft of its usage record (records.ts) and of its share of
// the daily rollup (daily-rollup.ts), both written by the settle's own transaction with what it charged.

import type { AppliedPrices } from '../catalog/usage-cost.ts';
import type { Usage } from '../core/types.ts';

/** What the call knows of itself when it settles; the charge is added by the settle's transaction. */
export interface UsageRecordDraft {
  requestId: string;
  walletId: string;
  keyId: string | null;
  at: Date;
  door: string;
  model: string;
  vendor: string;
  route: string | null;
  fallbackDepth: number;
  usage: Usage;
  durationMs: number;
  /** The call's trace id when telemetry is on, so the record joins the exported trace. */
  traceId: string | null;
  /** The prices the charge was computed at (engine/catalog/usage-cost.ts): the record recomputes its charge alone. */
  prices: AppliedPrices | null;
}

/**
 * A count as its column holds it: a whole number from 0 to `max` (bigint columns: the largest exact JavaScript
 * integer), a fraction rounded up as the charge counts it (catalog/pricing.ts `wholeCount`), so the record prices
 * to what was charged.
 */
export const recordedCount = (n: number, max = Number.MAX_SAFE_INTEGER): number =>
  Number.isFinite(n) && n > 0 ? Math.min(Math.ceil(n), max) : 0;
