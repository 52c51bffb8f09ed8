// Retrying a ledger transaction that PostgreSQL aborted for a deadlock or a serialization failure. Both
// say "the same work may succeed if done again": nothing was committed, so running it again is safe.

export const MAX_RETRIES = 5;
const RETRYABLE = new Set(['40P01', '40001']); // deadlock_detected, serialization_failure

export const isRetryable = (e: unknown): boolean => {
  const code = (e as { code?: string } | null)?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
};

/** A short random wait, longer with each attempt, so the transactions that collided do not collide again. */
export const backoff = (attempt: number) => new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));

export async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!isRetryable(e) || attempt >= MAX_RETRIES) throw e;
      await backoff(attempt);
    }
  }
}
