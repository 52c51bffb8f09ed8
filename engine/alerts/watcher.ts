// Detecting threshold crossings behind each committed charge, so the answer's path gains no database round trip.
// Each threshold fires exactly once across processes: a check takes the wallet's advisory lock, reads fresh figures
// and fires by a conditional write whose winner alone writes the event (docs/decisions/alerts.md).

import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.ts';
import { koreanDate, koreanMonthDays } from '../core/clock.ts';
import type { DisplayCurrency } from '../core/money.ts';
import { toBigInt } from '../core/money.ts';
import type { Db, Queryable } from '../db/db.ts';
import { jsonTable } from '../db/json-rows.ts';
import { type EventType, recordEvent } from './events.ts';
import { fireExpiringLots } from './expiring-lots.ts';
import { groupFigures } from './group-figures.ts';
import { type AlertSettings, CHECK_POLICY, type CheckPolicy } from './policy.ts';
import { readSettings } from './store.ts';
import { groupThresholds, keyThresholds, type Threshold, walletThresholds } from './thresholds.ts';

type Log = { error: (o: object, m: string) => void };

interface WalletConfig {
  settings: AlertSettings;
  types: Set<string>;
}

export interface WatcherDeps {
  db: Db;
  /**
   * The wallet's balance as every view counts it (engine/money/spendable.ts, given by the wiring: alerts do not
   * import money), read with the check's transaction: an expired lot's remainder is out of it from expires_at on.
   */
  balanceOf: (q: Queryable, walletId: string, now: Date) => Promise<bigint>;
  clock: Clock;
  log: () => Log;
  /** Deliveries were queued: the delivery worker of this process looks now rather than at its next round. */
  queued: () => void;
  policy?: CheckPolicy;
  /** billing.yaml's display currency in force: payloads say their credits in it too (events.ts withMoney). */
  currency?: (() => DisplayCurrency | null) | undefined;
}

/** Thresholds fired before that may fire again, by subject. */
const THRESHOLDS = jsonTable('subject text, threshold text');

/** Fires a threshold unless it fired already in this period: the conditional write only one process wins. */
const FIRE_SQL = `
INSERT INTO alert_state (subject, threshold, armed, period, fired_at) VALUES ($1, $2, false, $3, $4::timestamptz)
ON CONFLICT (subject, threshold) DO UPDATE SET armed = false, period = EXCLUDED.period, fired_at = EXCLUDED.fired_at
 WHERE alert_state.armed OR alert_state.period <> EXCLUDED.period
RETURNING subject`;

export class AlertWatcher {
  private readonly pending = new Map<string, Set<string>>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly configs: LRUCache<string, Promise<WalletConfig>>;
  private readonly policy: CheckPolicy;
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> = Promise.resolve();
  private stopped = false;
  private lastPrune = 0;
  private readonly currency = (): DisplayCurrency | null => this.deps.currency?.() ?? null;
  private checking = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly deps: WatcherDeps) {
    this.policy = deps.policy ?? CHECK_POLICY;
    // Bounded: one entry per wallet charged lately, gone after the TTL or when 10,000 newer ones came.
    this.configs = new LRUCache({ max: 10_000, ttl: this.policy.configTtlMs });
  }

  /** A charge of this wallet (by this key) committed. Never throws; the check runs behind. */
  charged(walletId: string, keyId?: string): void {
    if (this.stopped) return; // closing: the database is about to go
    let keys = this.pending.get(walletId);
    if (!keys) this.pending.set(walletId, (keys = new Set()));
    if (keyId) keys.add(keyId);
    if (!this.running.has(walletId)) this.running.set(walletId, this.drain(walletId));
  }

  /** The wallet's settings or endpoints changed here: the next check reads them again. */
  forget(walletId: string): void {
    this.configs.delete(walletId);
  }

  /** Resolves when no check is running or waiting (tests; close). */
  async idle(): Promise<void> {
    await this.sweeping;
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  start(): void {
    const round = () => {
      this.sweeping = this.sweep().catch((e) => this.deps.log().error({ err: e }, 'alert sweep failed'));
      this.timer = setTimeout(round, this.policy.sweepMs);
      this.timer.unref();
    };
    this.timer = setTimeout(round, 0);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.idle();
  }

  /** Checks the wallet until no charge is waiting; what arrives meanwhile joins the next check. */
  private async drain(walletId: string): Promise<void> {
    for (;;) {
      const keys = this.pending.get(walletId);
      if (!keys) {
        this.running.delete(walletId); // in the same turn as the look: a charge now starts a new drain
        return;
      }
      this.pending.delete(walletId);
      try {
        await this.check(walletId, [...keys]);
      } catch (e) {
        this.deps.log().error({ err: e, walletId }, 'alert check failed');
      }
    }
  }

  /**
   * One of CHECK_POLICY.concurrentChecks: a burst over many wallets never takes the pool from the charges, and a
   * check holding its connection while it waits for a second (its snapshot) never waits on other checks' ones.
   */
  private async slot(): Promise<void> {
    if (this.checking < this.policy.concurrentChecks) {
      this.checking++;
      return;
    }
    await new Promise<void>((r) => this.waiting.push(r)); // handed over by free(), still counted
  }

  private free(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.checking--;
  }

  private config(walletId: string): Promise<WalletConfig> {
    const hit = this.configs.get(walletId);
    if (hit) return hit;
    const value = (async () => {
      const r = await this.deps.db.query<{ events: unknown }>(
        `SELECT coalesce(to_jsonb(array_agg(DISTINCT e)), '[]'::jsonb) AS events
           FROM webhooks w, unnest(w.events) AS e WHERE w.wallet_id = $1 AND w.deleted_at IS NULL`,
        [walletId],
      );
      const raw = r.rows[0]?.events;
      const types = new Set<string>((typeof raw === 'string' ? JSON.parse(raw) : (raw ?? [])) as string[]);
      return { settings: types.size ? await readSettings(this.deps.db, walletId) : ({} as AlertSettings), types };
    })();
    value.catch(() => this.configs.delete(walletId));
    this.configs.set(walletId, value);
    return value;
  }

  /** One check of a wallet and the keys charged since the last one. */
  async check(walletId: string, keyIds: string[]): Promise<void> {
    await this.slot();
    try {
      await this.checkInSlot(walletId, keyIds);
    } finally {
      this.free();
    }
  }

  private async checkInSlot(walletId: string, keyIds: string[]): Promise<void> {
    const { settings, types } = await this.config(walletId);
    const wants = (t: EventType) => types.has(t);
    const keysWanted = keyIds.length > 0 && (wants('key.monthly_limit_threshold_crossed') || wants('key.daily_limit_threshold_crossed'));
    const groupsWanted =
      keyIds.length > 0 && (wants('key_group.monthly_limit_threshold_crossed') || wants('key_group.daily_limit_threshold_crossed'));
    if (!wants('balance.threshold_crossed') && !keysWanted && !groupsWanted) return;
    const now = this.deps.clock.now();
    const fired = await this.deps.db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`gateway.alerts.${walletId}`]);
      const thresholds: Threshold[] = [];
      if (wants('balance.threshold_crossed'))
        thresholds.push(...walletThresholds(settings, await walletFigures(tx, walletId, await this.balance(tx, walletId, now))));
      if (keysWanted) {
        for (const k of await keyFigures(tx, walletId, keyIds, now))
          thresholds.push(...keyThresholds(settings, k, now).filter((t) => wants(t.type)));
      }
      // A charged key's group is checked with it: a class's limit is crossed by the charge of one of its keys.
      if (groupsWanted) {
        for (const g of await groupFigures(tx, walletId, keyIds, now))
          thresholds.push(...groupThresholds(settings, g, now).filter((t) => wants(t.type)));
      }
      return this.apply(tx, walletId, thresholds, now);
    });
    if (fired > 0) this.deps.queued();
  }

  /**
   * The balance, read in parts (lots, then leases) in one snapshot taken after the lock: read apart in the check's
   * own transaction, a lease given back between the parts went uncounted as spent, the balance looked above a
   * threshold already fired, and it re-armed and fired twice. The embedded database runs nothing else meanwhile.
   */
  private balance(tx: Queryable, walletId: string, now: Date): Promise<bigint> {
    const { db, balanceOf } = this.deps;
    if (db.kind === 'pglite') return balanceOf(tx, walletId, now);
    return db.transaction((snapshot) => balanceOf(snapshot, walletId, now), { snapshot: true });
  }

  /** Fires what is crossed and armed (or in a new period), re-arms what is back on the safe side; returns how many fired. */
  private async apply(tx: Queryable, walletId: string, thresholds: Threshold[], now: Date): Promise<number> {
    if (thresholds.length === 0) return 0;
    const subjects = [...new Set(thresholds.map((t) => t.subject))];
    const rows = await tx.query<{ subject: string; threshold: string; armed: boolean; period: string }>(
      `SELECT subject, threshold, armed, period FROM alert_state WHERE subject = ANY($1::text[])`,
      [subjects],
    );
    const state = new Map(rows.rows.map((r) => [`${r.subject}|${r.threshold}`, r]));
    const rearm: Threshold[] = [];
    let fired = 0;
    for (const t of thresholds) {
      const s = state.get(`${t.subject}|${t.threshold}`);
      if (!t.crossed) {
        if (s && !s.armed) rearm.push(t);
        continue;
      }
      if (s && !s.armed && s.period === t.period) continue; // fired already: nothing to write
      const won = await tx.query(FIRE_SQL, [t.subject, t.threshold, t.period, now.toISOString()]);
      if (won.rows.length === 0) continue;
      await recordEvent(tx, walletId, t.type, t.data, now, this.currency());
      fired++;
    }
    if (rearm.length > 0) {
      await tx.query(
        `UPDATE alert_state SET armed = true
          WHERE (subject, threshold) IN (SELECT t.subject, t.threshold FROM ${THRESHOLDS.from('$1', 't')}) AND NOT armed`,
        [THRESHOLDS.json(rearm.map((t) => [t.subject, t.threshold]))],
      );
    }
    return fired;
  }

  /**
   * Wallets topped up since a threshold of theirs fired are looked at again (a top-up this process did not make:
   * the CLI writing to PostgreSQL directly); keys about to expire fire; old events go. Key thresholds need no
   * sweep: their period (day or month, and limit) re-arms them.
   */
  async sweep(): Promise<void> {
    const disarmed = await this.deps.db.query<{ wallet_id: string }>(
      `SELECT DISTINCT substr(s.subject, 8) AS wallet_id FROM alert_state s
        WHERE NOT s.armed AND s.subject LIKE 'wallet:%'
          AND EXISTS (SELECT 1 FROM credit_lots l WHERE l.wallet_id = substr(s.subject, 8) AND l.created_at >= s.fired_at)
        LIMIT 1000`,
    );
    for (const r of disarmed.rows) this.charged(r.wallet_id);
    await this.expiringKeys();
    if ((await fireExpiringLots(this.deps.db, this.deps.clock.now(), this.currency())) > 0) this.deps.queued();
    if (Date.now() - this.lastPrune >= this.policy.pruneEveryMs) {
      this.lastPrune = Date.now();
      await this.prune();
    }
  }

  /** Deletes events older than the retention with nothing left to send (deliveries and attempts go with them). */
  async prune(): Promise<number> {
    const r = await this.deps.db.query(
      `DELETE FROM webhook_events e WHERE e.created_at < $1::timestamptz
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')`,
      [new Date(this.deps.clock.now().getTime() - this.policy.eventRetentionDays * 86_400_000).toISOString()], // the clock events are dated by
    );
    return r.rowCount;
  }

  /** key.expiring, once per key and expiry date, for keys that stop working within the policy's days. */
  private async expiringKeys(): Promise<void> {
    const now = this.deps.clock.now();
    const horizon = koreanDate(new Date(now.getTime() + this.policy.expiringWithinDays * 86_400_000));
    const due = await this.deps.db.query<{ id: string; wallet_id: string; name: string | null; key_prefix: string; expires_on: string }>(
      `SELECT k.id, k.wallet_id, k.name, k.key_prefix, to_char(k.expires_on, 'YYYY-MM-DD') AS expires_on FROM api_keys k
        WHERE k.closed_at IS NULL AND k.expires_on IS NOT NULL AND k.expires_on >= $1::date AND k.expires_on < $2::date
          AND EXISTS (SELECT 1 FROM webhooks w WHERE w.wallet_id = k.wallet_id AND w.deleted_at IS NULL AND 'key.expiring' = ANY(w.events))
          AND NOT EXISTS (SELECT 1 FROM alert_state s WHERE s.subject = 'key:' || k.id AND s.threshold = 'expiring' AND s.period = to_char(k.expires_on, 'YYYY-MM-DD'))
        LIMIT 1000`,
      [koreanDate(now), horizon],
    );
    let fired = 0;
    for (const k of due.rows) {
      const expiresAt = new Date(new Date(`${k.expires_on}T00:00:00+09:00`).getTime() + 86_400_000);
      fired += await this.deps.db.transaction(async (tx) => {
        const won = await tx.query(FIRE_SQL, [`key:${k.id}`, 'expiring', k.expires_on, now.toISOString()]);
        if (won.rows.length === 0) return 0;
        const data = {
          key: { id: k.id, name: k.name, key_prefix: k.key_prefix },
          usable_until: k.expires_on,
          expires_at: expiresAt.toISOString(),
        };
        await recordEvent(tx, k.wallet_id, 'key.expiring', data, now, this.currency());
        return 1;
      });
    }
    if (fired > 0) this.deps.queued();
  }

  /** video.finished: one event per job, written by the process that finished it (the job's own conditional update). */
  async videoFinished(walletId: string, data: Record<string, unknown>): Promise<void> {
    if (!(await this.config(walletId)).types.has('video.finished')) return;
    const queued = await this.deps.db.transaction((tx) =>
      recordEvent(tx, walletId, 'video.finished', data, this.deps.clock.now(), this.currency()),
    );
    if (queued) this.deps.queued();
  }
}

/** The wallet's figures for its balance thresholds: its balance as the views count it, and its last top-up. */
async function walletFigures(q: Queryable, walletId: string, balanceNano: bigint) {
  const r = await q.query<{ last: string | null }>(
    'SELECT granted_nano::text AS last FROM credit_lots WHERE wallet_id = $1 ORDER BY seq DESC LIMIT 1',
    [walletId],
  );
  const last = r.rows[0]?.last;
  return { walletId, balanceNano, lastTopUpNano: last == null ? null : toBigInt(last) };
}

async function keyFigures(q: Queryable, walletId: string, keyIds: string[], now: Date) {
  const r = await q.query<Record<string, string | null>>(
    `SELECT k.id, k.name, k.key_prefix, k.monthly_limit_credits::text AS monthly, k.daily_limit_credits::text AS daily,
            (SELECT coalesce(sum(d.charged_nano), 0) FROM usage_daily d
              WHERE d.key_id = k.id AND d.day >= $3::date AND d.day < $5::date)::text AS month_used,
            (SELECT coalesce(sum(d.charged_nano), 0) FROM usage_daily d WHERE d.key_id = k.id AND d.day = $4::date)::text AS day_used
       FROM api_keys k
      WHERE k.wallet_id = $1 AND k.id = ANY($2::text[]) AND k.closed_at IS NULL
        AND (k.monthly_limit_credits IS NOT NULL OR k.daily_limit_credits IS NOT NULL)`,
    [walletId, keyIds, koreanMonthDays(now).from, koreanDate(now), koreanMonthDays(now).to],
  );
  return r.rows.map((row) => ({
    keyId: String(row.id),
    name: row.name ?? null,
    keyPrefix: String(row.key_prefix),
    monthlyLimitCredits: row.monthly == null ? null : Number(row.monthly),
    dailyLimitCredits: row.daily == null ? null : Number(row.daily),
    monthUsedNano: toBigInt(row.month_used ?? '0'),
    dayUsedNano: toBigInt(row.day_used ?? '0'),
  }));
}
