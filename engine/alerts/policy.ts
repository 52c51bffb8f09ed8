// The alerts' policies, one object per concern: how deliveries are retried and bounded, how often the
// background checks run, and the thresholds a wallet has until its owner sets its own.

/** How a webhook delivery is sent and retried. */
export interface DeliveryPolicy {
  /** Whole attempt (connect, send, answer): a receiver that hangs holds one worker slot no longer. */
  timeoutMs: number;
  /** Attempts before a delivery is given up (state `failed`); a replay starts a new delivery. */
  maxAttempts: number;
  /** Wait before the second attempt; each later wait is `factor` times the one before, up to `maxDelayMs`. */
  firstDelayMs: number;
  factor: number;
  maxDelayMs: number;
  /** Characters of the receiver's answer kept per attempt: enough to see an error, never a whole page. */
  excerptChars: number;
  /** Deliveries one process claims per round, and how often it looks for due ones. */
  batch: number;
  pollMs: number;
}

export const DELIVERY_POLICY: DeliveryPolicy = {
  timeoutMs: 5_000,
  maxAttempts: 8,
  firstDelayMs: 1_000,
  factor: 4,
  maxDelayMs: 60 * 60_000,
  excerptChars: 500,
  batch: 10,
  pollMs: 1_000,
};

/** The wait after `attempts` failed attempts (1 → firstDelayMs). */
export function retryDelayMs(policy: DeliveryPolicy, attempts: number): number {
  return Math.min(policy.maxDelayMs, policy.firstDelayMs * policy.factor ** Math.max(0, attempts - 1));
}

/** When the threshold checks run besides the ones a charge starts. */
export interface CheckPolicy {
  /** How long a wallet's settings and subscriptions are reused before being read again (changes made here drop it at once). */
  configTtlMs: number;
  /** How often wallets with a fired threshold are looked at again: re-arms what a top-up made elsewhere lifted. */
  sweepMs: number;
  /** key.expiring fires for a key expiring within this many days. */
  expiringWithinDays: number;
  /** Events (with their deliveries and attempts) are kept this long for the owner to look at and replay. */
  eventRetentionDays: number;
  /** How often the old ones are deleted (by whichever process's sweep comes first after this much time). */
  pruneEveryMs: number;
  /**
   * Wallets checked at once by one process: each check holds a database connection for its transaction, and the
   * charges' own writes share the pool (20 connections by default); more wallets wait their turn.
   */
  concurrentChecks: number;
}

export const CHECK_POLICY: CheckPolicy = {
  configTtlMs: 5_000,
  sweepMs: 30_000,
  expiringWithinDays: 7,
  eventRetentionDays: 30,
  pruneEveryMs: 60 * 60_000,
  concurrentChecks: 2,
};

/** A wallet's thresholds. */
export interface AlertSettings {
  /** Percentages of the wallet's last top-up: fires when the balance falls to or below. */
  balancePercents: number[];
  /** Balances in credits: fires when the balance falls to or below. */
  balanceCredits: number[];
  /** Percentages of each key's monthly / daily limit: fires when the period's use reaches it. */
  keyMonthlyPercents: number[];
  keyDailyPercents: number[];
  /** credits.expiring goes out this many days before a lot's expiry (once per lot). */
  creditsExpiringDays: number;
}

export const DEFAULT_SETTINGS: AlertSettings = {
  balancePercents: [20, 5],
  balanceCredits: [],
  keyMonthlyPercents: [80, 100],
  keyDailyPercents: [80, 100],
  creditsExpiringDays: 14,
};

/** Bounds on settings, so one wallet cannot make a check do unbounded work. */
export const SETTINGS_LIMITS = { perList: 10, maxPercent: 1000, maxExpiringDays: 365 } as const;

/** Allowing private addresses for webhooks (tests with a loopback receiver, a private network the operator trusts). */
export const ALLOW_PRIVATE_SETTING = 'GATEWAY_WEBHOOKS_ALLOW_PRIVATE';
