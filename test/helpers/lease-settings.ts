// Lease settings for tests that drive BudgetLeases directly: the shipped shape, with what the test is about changed.
import type { LeaseSettings } from '../../engine/money/leases.ts';

export const leaseSettings = (changed: Partial<LeaseSettings>): LeaseSettings => ({
  sliceSeconds: 10,
  minSliceNano: 1_000_000n,
  maxShare: 0.25,
  ttlMs: 60_000,
  idleReturnMs: 30_000,
  maxPendingDraws: 1_024,
  ...changed,
});
