// Per-key quotas: monthly and daily credit limits on Korean days and months. The monthly check counts calls in
// flight at their largest amount and is decided again under a lock in the ledger's reserve, so calls sent at once
// cannot pass it together; the daily one follows the spec's approximate accounting. The refusals and their
// wording: engine/keys/README.md, "Quota refusals".

import { koreanMonthDays, nextKoreanMidnight, nextKoreanMonthStart } from '../core/clock.ts';
import { errors, type GatewayError } from '../core/errors.ts';
import { nanoToCreditsFloor } from '../core/money.ts';
import type { Db, Queryable } from '../db/db.ts';
import {
  checkGroupDay,
  type GroupCap,
  groupCap,
  groupDayLeftNano,
  groupMonthLeftNano,
  groupMonthlyLimitError,
  groupUsage,
} from './group-quota.ts';
import { countKeyUse, type KeyDays, keyUsage } from './key-use.ts';
import { type AuthContext, askLessHint, type KeyGroupContext, usedCredits } from './types.ts';
import { type KeyUsage, KeyUseCache, type UseToken } from './use-cache.ts';

export type { KeyUsage };

/**
 * What this process's calls in flight hold against a key's and its group's daily limits: counted with the day's
 * use, so calls sent together on one process cannot each take the whole day (day-holds.ts keeps it).
 */
export interface DayHeld {
  keyNano: bigint;
  groupNano: bigint;
}

const NOTHING_HELD: DayHeld = { keyNano: 0n, groupNano: 0n };

/** The GET /v1/key answer (object `key`). */
interface KeyStatus {
  object: 'key';
  key_prefix: string;
  audience: 'student' | 'teacher' | null;
  expires_at: string | null;
  usable_until: string | null;
  month: PeriodStatus;
  day: PeriodStatus;
  /** The key's group (class) with its limits and its keys' use; null when the key is in none. */
  group: { id: string; name: string; month: PeriodStatus; day: PeriodStatus } | null;
}

interface PeriodStatus {
  limit_credits: number | null;
  used_credits: number;
  remaining_credits: number | null;
  resets_at: string;
}

/**
 * A key's monthly limit as the ledger checks it when it reserves: the ledger locks the key and reads its finished
 * use over `days` (the Korean month) with its holds (key-use.ts, lockKeys and readKeyStandings).
 */
interface MonthlyCap {
  limitNano: bigint;
  days: KeyDays;
  /** The key's group's monthly limit, checked beside the key's own (group-quota.ts). */
  group?: GroupCap;
}

/** The group figures of a reserve its group refused (engine/money's KeyCapRefusal.group). */
interface GroupRefusal {
  limitNano: bigint;
  usedNano: bigint;
  heldNano: bigint;
}

/** A grouped key without a monthly limit of its own carries this one in its cap: only the group's limit binds. */
const NO_KEY_LIMIT = 2n ** 62n;

export interface QuotaService {
  /** Used amounts of keys on the Korean day and month of `now`. Keys without use map to zeros. */
  usage(keyIds: string[], now: Date, q?: Queryable): Promise<Map<string, KeyUsage>>;
  /**
   * Throws 429 key_limit_exceeded when the call may not start. `maxCostNano` is the call's largest amount. A key
   * with a daily limit reads its use; a key with only a monthly limit reads this process's figure (use-cache.ts),
   * kept by `noteUse`.
   */
  checkQuota(auth: AuthContext, maxCostNano: bigint, now: Date, dayHeld?: DayHeld): Promise<void>;
  /** Whether the key's check reads this process's figure (a monthly limit and no daily one): only its charges are noted. */
  readsFigure(auth: AuthContext): boolean;
  /** Taken when a call's charge is handed over, for `noteUse`. */
  useToken(keyId: string): UseToken;
  /** A charge of the key committed: its use counts in this process's next checks without a read. */
  noteUse(keyId: string, chargedNano: bigint, finishedAt: Date, token: UseToken): void;
  /** What the key's daily limit leaves of the Korean day of `now` (0 once used up), or null when the key has none. */
  dayLeftNano(auth: AuthContext, now: Date, dayHeld?: DayHeld): Promise<bigint | null>;
  /** What the key's group's daily limit leaves (this process's calls in flight counted), or null when it has none. */
  groupDayLeftNano(auth: AuthContext, now: Date, dayHeld?: DayHeld): Promise<bigint | null>;
  /** What the key's group's monthly limit leaves (its keys' holds counted), or null when the key's group has none. */
  groupMonthLeftNano(auth: AuthContext, now: Date): Promise<bigint | null>;
  /** The key's monthly limit for the reservation's transaction, or null when the key has none. */
  monthlyCap(auth: AuthContext, now: Date): MonthlyCap | null;
  /** The 429 for a call whose largest amount does not fit what the month leaves (used and held by calls in flight). */
  monthlyLimitError(
    auth: AuthContext,
    maxCostNano: bigint,
    usedNano: bigint,
    heldNano: bigint,
    now: Date,
    group?: GroupRefusal,
  ): GatewayError;
  /**
   * Counts an amount on the key's Korean day (and so its month) of `finishedAt` outside a charge: a rollup row
   * of its own (key-use.ts, countKeyUse). A charge counts through its usage record's rollup row. Pass `tx` to join a transaction.
   */
  recordUsage(keyId: string, nano: bigint, finishedAt: Date, tx?: Queryable): Promise<void>;
  /** The GET /v1/key object for the calling key. */
  keyStatus(auth: AuthContext, now: Date): Promise<KeyStatus>;
}

const credits = (nano: bigint): number => Number(nanoToCreditsFloor(nano));

function periodStatus(limitNano: bigint | null, usedNano: bigint, resetsAt: Date): PeriodStatus {
  const used = usedCredits(usedNano);
  const limit = limitNano == null ? null : credits(limitNano);
  return {
    limit_credits: limit,
    used_credits: used,
    remaining_credits: limit == null ? null : Math.max(0, limit - used),
    resets_at: resetsAt.toISOString(),
  };
}

async function groupStatus(db: Queryable, group: KeyGroupContext, now: Date): Promise<KeyStatus['group']> {
  const u = (await groupUsage(db, [group.id], now)).get(group.id)!;
  return {
    id: group.id,
    name: group.name,
    month: periodStatus(group.monthlyLimitNano, u.monthNano, nextKoreanMonthStart(now)),
    day: periodStatus(group.dailyLimitNano, u.dayNano, nextKoreanMidnight(now)),
  };
}

function monthlyLimitError(
  auth: AuthContext,
  maxCostNano: bigint,
  usedNano: bigint,
  heldNano: bigint,
  now: Date,
  group?: GroupRefusal,
): GatewayError {
  if (group && auth.group) return groupMonthlyLimitError(auth.group.name, maxCostNano, group, now);
  const limit = credits(auth.monthlyLimitNano ?? 0n);
  const held = heldNano > 0n ? `, ${usedCredits(heldNano)} more held by this key's calls still in progress` : '';
  return errors.keyLimit(
    `This call may pass this key's monthly limit: ${usedCredits(usedNano)} of ${limit} credits used this month${held}, and ` +
      `the call may use up to ${usedCredits(maxCostNano)} credits. ${askLessHint(auth.monthlyLimitNano ?? 0n, usedNano, heldNano)}The limit reopens at ` +
      `${nextKoreanMonthStart(now).toISOString()} (00:00 Korean time on the first of next month); raising the key's monthly ` +
      `limit lifts it at once.`,
    // Calls in flight give back what they hold when they finish: then a moment's wait may be enough.
    heldNano > 0n ? 1_000 : nextKoreanMonthStart(now).getTime() - now.getTime(),
  );
}

/** The key's monthly cap for the ledger's reserve: its own limit, with its group's beside it (group-quota.ts). */
function monthlyCap(auth: AuthContext, now: Date): MonthlyCap | null {
  const grouped = auth.group?.monthlyLimitNano != null;
  if (auth.monthlyLimitNano == null && !grouped) return null;
  return {
    limitNano: auth.monthlyLimitNano ?? NO_KEY_LIMIT,
    days: koreanMonthDays(now),
    ...(grouped ? { group: groupCap(auth.group!.id, now) } : {}),
  };
}

export function createQuotaService(db: Db): QuotaService {
  async function one(keyId: string, now: Date): Promise<KeyUsage> {
    return (await keyUsage(db, [keyId], now)).get(keyId)!;
  }

  const uses = new KeyUseCache({ read: one });

  const readsFigure = (auth: AuthContext) => auth.monthlyLimitNano != null && auth.dailyLimitNano == null;

  return {
    usage: (keyIds, now, q = db) => keyUsage(q, keyIds, now),
    monthlyLimitError,

    async checkQuota(auth, maxCostNano, now, dayHeld = NOTHING_HELD) {
      if (auth.group?.dailyLimitNano != null) await checkGroupDay(db, auth.group, now, dayHeld.groupNano);
      if (auth.monthlyLimitNano == null && auth.dailyLimitNano == null) return;
      // A daily limit is read from the database: a call sent after another process's answer showed the day used
      // up must see it. The monthly check alone is an early refusal (the key's leases and holds are what keep
      // the month), so this process's figure does.
      const u = readsFigure(auth) ? await uses.get(auth.keyId, now) : await one(auth.keyId, now);
      if (auth.monthlyLimitNano != null && u.monthNano + maxCostNano > auth.monthlyLimitNano) {
        throw monthlyLimitError(auth, maxCostNano, u.monthNano, 0n, now);
      }
      if (auth.dailyLimitNano != null && u.dayNano + dayHeld.keyNano >= auth.dailyLimitNano) {
        const limit = credits(auth.dailyLimitNano);
        const held = dayHeld.keyNano > 0n ? `, ${usedCredits(dayHeld.keyNano)} held by its calls in progress` : '';
        throw errors.keyLimit(
          `This key reached its daily limit of ${limit} credits (${usedCredits(u.dayNano)} used today${held}). ` +
            `It reopens at ${nextKoreanMidnight(now).toISOString()} (00:00 Korean time); raising the key's daily limit lifts it at once.`,
          nextKoreanMidnight(now).getTime() - now.getTime(),
        );
      }
    },

    groupDayLeftNano: async (auth, now, dayHeld = NOTHING_HELD) =>
      auth.group?.dailyLimitNano != null ? groupDayLeftNano(db, auth.group, now, dayHeld.groupNano) : null,

    async dayLeftNano(auth, now, dayHeld = NOTHING_HELD) {
      const groupLeft = auth.group?.dailyLimitNano != null ? await groupDayLeftNano(db, auth.group, now, dayHeld.groupNano) : null;
      if (auth.dailyLimitNano == null) return groupLeft;
      const left = auth.dailyLimitNano - (await one(auth.keyId, now)).dayNano - dayHeld.keyNano;
      const keyLeft = left > 0n ? left : 0n;
      return groupLeft !== null && groupLeft < keyLeft ? groupLeft : keyLeft;
    },

    groupMonthLeftNano: async (auth, now) => (auth.group ? groupMonthLeftNano(db, auth.group.id, now) : null),

    monthlyCap,

    readsFigure,
    useToken: (keyId) => uses.token(keyId),
    noteUse: (keyId, chargedNano, finishedAt, token) => uses.note(keyId, chargedNano, finishedAt, token),

    async recordUsage(keyId, nano, finishedAt, tx) {
      await countKeyUse(tx ?? db, keyId, nano, finishedAt);
      uses.forget(keyId);
    },

    async keyStatus(auth, now) {
      const u = await one(auth.keyId, now);
      return {
        object: 'key',
        key_prefix: auth.keyPrefix,
        audience: auth.audience,
        expires_at: auth.expiresAt ? auth.expiresAt.toISOString() : null,
        usable_until: auth.expiresOn,
        month: periodStatus(auth.monthlyLimitNano, u.monthNano, nextKoreanMonthStart(now)),
        day: periodStatus(auth.dailyLimitNano, u.dayNano, nextKoreanMidnight(now)),
        group: auth.group ? await groupStatus(db, auth.group, now) : null,
      };
    },
  };
}
