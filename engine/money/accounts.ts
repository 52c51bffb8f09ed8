// The seam between a call and money: who is calling, may they spend this much, and what did it cost. The call
// path knows only this interface; keys, quotas and the ledger sit behind it (docs/money.md).
import type { DoorConfig } from '../catalog/config.ts';
import type { ModelEntry } from '../core/types.ts';
import type { ChargeRows } from '../db/charge-rows.ts';
import type { Charge } from './charge-writer.ts';

export type { ChargeRows };

export interface Caller {
  keyId: string;
  walletId: string;
  keyPrefix: string;
  audience: 'student' | 'teacher' | null;
  /** The model ids and `prefix*` patterns the key may call; null or absent: every model its credits allow. */
  models?: readonly string[] | null | undefined;
}

/** Money held for one call. Opaque to the call path. */
export interface Hold {
  readonly callId: string;
  readonly amountNano: bigint;
}

/** What a caller could hold, and the limit that leaves the least (the one a refusal names). */
export interface Room {
  nano: bigint;
  bound: { kind: 'wallet' | 'key_month' | 'day' } | { kind: 'group_month' | 'group_day'; group: string };
}

export type Headers = Record<string, string | string[] | undefined>;

export interface Accounts {
  /** 401 when the key is missing, unknown, closed, expired or of the wrong kind. `keyHeaders`: bearer when omitted. */
  authenticate(headers: Headers, keyHeaders?: DoorConfig['key_headers']): Promise<Caller>;
  /**
   * Quota, plan and credit checks: 429, 403 or 402 before any vendor call. `advice`, said in the 402, is what the
   * client can change to hold less (`lower max_tokens (4096) to lower the reservation`).
   */
  admit(caller: Caller, model: ModelEntry, amountNano: bigint, callId: string, advice?: string): Promise<Hold>;
  /** About the most `caller` could hold now for `model` (this process's leases counted back); other calls may take it first. */
  room(caller: Caller, model: ModelEntry): Promise<Room>;
  /** What the caller's key's daily limit leaves of today, or null when the key has none (no read then). */
  dayLeft(caller: Caller): Promise<bigint | null>;
  /**
   * The call's turn to be planned and admitted when its key or class has a daily limit (one at a time on this process,
   * so each is fitted to what the calls before it hold); resolves with what ends the turn. Null: no day to keep.
   */
  dayTurn(caller: Caller): Promise<() => void> | null;
  /** Charges the cost (the rest goes back) with `rows`, counts it on the key's quotas; never throws. The answer waits for `committed`. */
  charge(caller: Caller, hold: Hold, costNano: bigint, rows?: ChargeRows): Charge;
  /** Gives the whole hold back: the call failed. */
  release(hold: Hold): Promise<void>;

  // Long jobs (videos) outlive the request and maybe the process: their hold is kept by reference.
  /** A durable reference to the hold, to settle or release it later from any process. */
  holdRef(hold: Hold): string;
  /** Keeps a held reference from being swept before `expiresAt`. False when it is no longer held. */
  extendHold(holdRef: string, expiresAt: Date): Promise<boolean>;
  /** As charge, on the quotas of the key that made the hold and the Korean day it finishes. Idempotent. */
  chargeDetached(holdRef: string, keyId: string, costNano: bigint, rows?: ChargeRows): Promise<bigint>;
  /** Gives the whole hold back. Idempotent. */
  releaseDetached(holdRef: string): Promise<void>;
}
