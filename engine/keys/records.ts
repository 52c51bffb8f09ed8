// The api_key record the key doors answer with: never the full key except once, at creation.
import { endOfKoreanDay } from '../core/clock.ts';
import type { KeyUsage } from './quota.ts';
import { type KeyRow, usedCredits } from './types.ts';

export interface ApiKeyRecord {
  object: 'api_key';
  id: string;
  name: string | null;
  key_prefix: string;
  audience: 'student' | 'teacher' | null;
  monthly_limit_credits: number | null;
  month_used_credits: number;
  daily_limit_credits: number | null;
  day_used_credits: number;
  expires_at: string | null;
  usable_until: string | null;
  created_at: string;
  last_used_at: string | null;
  /** Model ids and `prefix*` patterns the key may call; null: every model the wallet's credits allow. */
  models: string[] | null;
  /** The key's group (a class), or null. */
  group_id: string | null;
  /** Only in the creation answer. */
  key?: string;
}

export function keyRecord(
  row: KeyRow,
  opts: { splitsUsage: boolean; usage?: KeyUsage | undefined; lastUsedAt?: Date | null | undefined; key?: string },
): ApiKeyRecord {
  const lastUsed = [row.lastUsedAt, opts.lastUsedAt ?? null]
    .filter((d): d is Date => d instanceof Date)
    .sort((a, b) => b.getTime() - a.getTime())[0];
  const rec: ApiKeyRecord = {
    object: 'api_key',
    id: row.id,
    name: row.name,
    key_prefix: row.keyPrefix,
    audience: opts.splitsUsage ? row.audience : null,
    monthly_limit_credits: row.monthlyLimitCredits,
    month_used_credits: usedCredits(opts.usage?.monthNano ?? 0n),
    daily_limit_credits: row.dailyLimitCredits,
    day_used_credits: usedCredits(opts.usage?.dayNano ?? 0n),
    expires_at: row.expiresOn ? endOfKoreanDay(row.expiresOn).toISOString() : null,
    usable_until: row.expiresOn,
    created_at: row.createdAt.toISOString(),
    last_used_at: lastUsed ? lastUsed.toISOString() : null,
    models: row.models,
    group_id: row.groupId,
  };
  if (opts.key !== undefined) rec.key = opts.key;
  return rec;
}
