// Which thresholds a wallet's figures are past: pure functions from figures and settings to a list of
// thresholds, each with the subject and name its alert_state row has, whether it is crossed now, and the
// event it would send. Deciding whether to fire is watcher.ts's (the database's conditional write).

import { koreanDate, koreanMonth, nextKoreanMidnight, nextKoreanMonthStart } from '../core/clock.ts';
import { nanoToCreditsCeil, nanoToCreditsFloor } from '../core/money.ts';
import type { EventType } from './events.ts';
import type { AlertSettings } from './policy.ts';

interface WalletFigures {
  walletId: string;
  /** What the wallet has not spent: available plus held (calls in flight and leases give back what they do not charge). */
  balanceNano: bigint;
  /** The last credit lot's grant; null when the wallet never had one. */
  lastTopUpNano: bigint | null;
}

interface LimitFigures {
  monthlyLimitCredits: number | null;
  dailyLimitCredits: number | null;
  monthUsedNano: bigint;
  dayUsedNano: bigint;
}

interface KeyFigures extends LimitFigures {
  keyId: string;
  name: string | null;
  keyPrefix: string;
}

/** A key group's limits and the sum of its keys' use. */
export interface GroupFigures extends LimitFigures {
  groupId: string;
  name: string;
}

export interface Threshold {
  subject: string;
  threshold: string;
  /** Korean month or day and the limit, for key limits ('' for wallet thresholds): a new one re-arms by itself. */
  period: string;
  crossed: boolean;
  type: EventType;
  data: Record<string, unknown>;
}

const NANO_PER_CREDIT = 1000n;
const credits = (nano: bigint) => Number(nanoToCreditsFloor(nano));

export function walletThresholds(s: AlertSettings, f: WalletFigures): Threshold[] {
  const out: Threshold[] = [];
  const subject = `wallet:${f.walletId}`;
  const balance = { balance_credits: credits(f.balanceNano) };
  if (f.lastTopUpNano !== null) {
    for (const pct of s.balancePercents) {
      const level = (f.lastTopUpNano * BigInt(Math.round(pct * 100))) / 10_000n;
      out.push({
        subject,
        threshold: `balance_pct:${pct}`,
        period: '',
        crossed: f.balanceNano <= level,
        type: 'balance.threshold_crossed',
        data: {
          threshold: { percent_of_last_top_up: pct, credits: credits(level) },
          last_top_up_credits: credits(f.lastTopUpNano),
          ...balance,
        },
      });
    }
  }
  for (const c of s.balanceCredits) {
    out.push({
      subject,
      threshold: `balance_credits:${c}`,
      period: '',
      crossed: f.balanceNano <= BigInt(c) * NANO_PER_CREDIT,
      type: 'balance.threshold_crossed',
      data: { threshold: { credits: c }, ...balance },
    });
  }
  return out;
}

export function keyThresholds(s: AlertSettings, k: KeyFigures, now: Date): Threshold[] {
  const who = { key: { id: k.keyId, name: k.name, key_prefix: k.keyPrefix } };
  return limitThresholds(s, `key:${k.keyId}`, who, k, now, ['key.monthly_limit_threshold_crossed', 'key.daily_limit_threshold_crossed']);
}

/** A group's (a class's) limits over the sum of its keys' use: the same percents as a key's, its own events. */
export function groupThresholds(s: AlertSettings, g: GroupFigures, now: Date): Threshold[] {
  const who = { key_group: { id: g.groupId, name: g.name } };
  const types = ['key_group.monthly_limit_threshold_crossed', 'key_group.daily_limit_threshold_crossed'] as const;
  return limitThresholds(s, `group:${g.groupId}`, who, g, now, types);
}

function limitThresholds(
  s: AlertSettings,
  subject: string,
  who: Record<string, unknown>,
  k: LimitFigures,
  now: Date,
  [monthType, dayType]: readonly [EventType, EventType],
): Threshold[] {
  const out: Threshold[] = [];
  const limits = [
    {
      scope: 'month',
      limit: k.monthlyLimitCredits,
      used: k.monthUsedNano,
      pcts: s.keyMonthlyPercents,
      period: koreanMonth(now),
      resets: nextKoreanMonthStart(now),
      type: monthType,
    },
    {
      scope: 'day',
      limit: k.dailyLimitCredits,
      used: k.dayUsedNano,
      pcts: s.keyDailyPercents,
      period: koreanDate(now),
      resets: nextKoreanMidnight(now),
      type: dayType,
    },
  ] as const;
  for (const l of limits) {
    if (l.limit === null || l.limit <= 0) continue;
    for (const pct of l.pcts) {
      const level = (BigInt(l.limit) * NANO_PER_CREDIT * BigInt(Math.round(pct * 100))) / 10_000n;
      out.push({
        subject,
        threshold: `${l.scope}:${pct}`,
        // The limit is part of the period: a new day or month, or a changed limit, re-arms without a check seeing it.
        period: `${l.period}|${l.limit}`,
        crossed: l.used >= level,
        type: l.type,
        data: {
          ...who,
          threshold: { percent: pct },
          limit_credits: l.limit,
          used_credits: Number(nanoToCreditsCeil(l.used)),
          period: l.period,
          resets_at: l.resets.toISOString(),
        },
      });
    }
  }
  return out;
}
