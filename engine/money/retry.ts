// The ledger's one retry policy: only a deadlock or serialization failure (nothing committed) and a charge the database
// could not take (it is owed) are retried; a refusal would answer the same (docs/decisions/charge-writer.md).
import { isGatewayError } from '../core/errors.ts';
import { MoneyInvariantBroken } from './invariants.ts';

export const MAX_RETRIES = 5;
const RETRYABLE = new Set(['40P01', '40001']); // deadlock_detected, serialization_failure

const codeOf = (e: unknown): unknown => (e as { code?: unknown } | null)?.code;
export const isRetryable = (e: unknown): boolean => {
  const code = codeOf(e);
  return typeof code === 'string' && RETRYABLE.has(code);
};

/** A batch's `lock_timeout`: a lock held longer is another session's, which the queue's other wallets must not wait on. */
export const LOCK_WAIT_MS = 500;
/** A statement gave up waiting for a row lock after LOCK_WAIT_MS (lock_not_available). */
export const isLockTimeout = (e: unknown): boolean => codeOf(e) === '55P03';

/** A lock wait on a table every charge writes, not a wallet's rows: no charge lands, so it is an outage, retried as such. */
export class TablesLocked extends Error {
  override name = 'TablesLocked';
  constructor(cause: unknown) {
    super('a table the ledger writes is locked by another session', { cause });
  }
}

/** A short random wait, longer with each attempt, so the transactions that collided do not collide again. */
export const backoff = (attempt: number) => new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));

/** Runs `fn`, again after a deadlock or serialization failure, MAX_RETRIES times at most. */
export async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!isRetryable(e)) throw e;
    }
    await backoff(attempt);
  }
  return fn();
}

/** Doubling waits from `firstMs` to `maxMs`, `attempts` at most; past them a charge is given up, logged at error level. */
export interface ChargeRetry {
  firstMs: number;
  maxMs: number;
  attempts: number;
}

/** A day of tries at the ceiling's pace: an outage longer than that is an operator's to mend, from the log. */
export const CHARGE_RETRY: ChargeRetry = { firstMs: 250, maxMs: 5_000, attempts: 17_280 };

export const nextDelayMs = (policy: ChargeRetry, lastMs: number | undefined): number =>
  lastMs === undefined ? policy.firstMs : Math.min(lastMs * 2, policy.maxMs);

/** A failure no retry can mend: the ledger refused the move, or its rows contradict themselves. */
export const isFinal = (e: unknown): boolean =>
  isGatewayError(e) || e instanceof MoneyInvariantBroken || (e instanceof Error && e.message.startsWith('ledger: '));
