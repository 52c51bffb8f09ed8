// The ledger checks itself: a row that breaks an invariant is a bug or a hand edit nothing else would notice until a
// customer did. Each check is one statement, one snapshot (docs/decisions/ledger-audit.md).
import type { Clock } from '../core/clock.ts';
import type { Queryable } from '../db/db.ts';
import { KEPT_HOLD_MS } from './kept-holds.ts';
import type { MoneyLog } from './types.ts';

export const LEDGER_CHECKS = ['wallet_journal', 'lot_journal', 'negative_balance', 'expired_hold', 'hold_lots'] as const;
export type LedgerCheck = (typeof LEDGER_CHECKS)[number];

/** Where a check failed: the wallet, and the lot or reservation when the check is about one. */
export interface LedgerExample {
  walletId: string;
  lotId?: string;
  reservationId?: string;
}

interface LedgerAudit {
  ok: boolean;
  /** Rows found per check run (0: it passed). */
  failures: Partial<Record<LedgerCheck, number>>;
  /** Up to `examples` places per failed check. */
  examples: Partial<Record<LedgerCheck, LedgerExample[]>>;
}

interface LedgerAuditOptions {
  /** A held reservation that expired before this instant fails expired_hold; null leaves that check out. */
  heldExpiredBefore: Date | null;
  /** Only these wallets (the test auditor's); all when absent. */
  walletIds?: readonly string[];
  /** Example ids kept per failed check (default 5). */
  examples?: number;
}

const AVAIL = `CASE kind WHEN 'top_up' THEN amount_nano WHEN 'reserve' THEN -amount_nano WHEN 'release' THEN amount_nano WHEN 'expire' THEN -amount_nano ELSE 0 END`;
const RESERVED = `CASE kind WHEN 'reserve' THEN amount_nano WHEN 'settle' THEN -amount_nano WHEN 'release' THEN -amount_nano ELSE 0 END`;
/** $1: the wallets audited, or null for all. */
const inScope = (column: string) => `($1::text[] IS NULL OR ${column} = ANY($1::text[]))`;

// Every query below defines `failed(check_name, wallet_id, lot_id, reservation_id)`; this keeps the count per
// check and its first $2 rows, so a ledger broken everywhere still answers in a few rows.
const examplesOf = (ctes: string) => `
WITH ${ctes}
SELECT check_name, wallet_id, lot_id, reservation_id, failures::text AS failures FROM (
  SELECT f.*, count(*) OVER (PARTITION BY check_name) AS failures,
         row_number() OVER (PARTITION BY check_name ORDER BY wallet_id, lot_id, reservation_id) AS n
    FROM failed f
) x WHERE n <= $2`;

// The journal, once, per (wallet, lot): both journal checks read it. Grouping by the journal's own wallet_id
// (not the lot's) makes a row written under the wrong wallet show on both wallets.
const JOURNAL_SQL = examplesOf(`
j AS MATERIALIZED (
  SELECT wallet_id, lot_id, sum(${AVAIL}) AS avail, sum(${RESERVED}) AS reserved
    FROM ledger_journal WHERE ${inScope('wallet_id')}
   GROUP BY wallet_id, lot_id
), by_wallet AS (
  SELECT wallet_id, sum(avail) AS avail, sum(reserved) AS reserved FROM j GROUP BY wallet_id
), by_lot AS (
  SELECT lot_id, sum(avail) AS avail, sum(reserved) AS reserved FROM j GROUP BY lot_id
), lots_by_wallet AS (
  SELECT wallet_id, sum(available_nano) AS avail, sum(reserved_nano) AS reserved
    FROM credit_lots WHERE ${inScope('wallet_id')} GROUP BY wallet_id
), failed AS (
  SELECT 'wallet_journal' AS check_name, w.id AS wallet_id, NULL::text AS lot_id, NULL::text AS reservation_id
    FROM wallets w LEFT JOIN by_wallet s ON s.wallet_id = w.id LEFT JOIN lots_by_wallet l ON l.wallet_id = w.id
   WHERE ${inScope('w.id')} AND (coalesce(l.avail, 0) <> coalesce(s.avail, 0) OR coalesce(l.reserved, 0) <> coalesce(s.reserved, 0))
  UNION ALL
  SELECT 'lot_journal', l.wallet_id, l.id, NULL
    FROM credit_lots l LEFT JOIN by_lot s ON s.lot_id = l.id
   WHERE ${inScope('l.wallet_id')} AND (l.available_nano <> coalesce(s.avail, 0) OR l.reserved_nano <> coalesce(s.reserved, 0))
  UNION ALL
  SELECT 'negative_balance', l.wallet_id, min(l.id), NULL
    FROM credit_lots l
   WHERE ${inScope('l.wallet_id')} AND (l.available_nano < 0 OR l.reserved_nano < 0)
   GROUP BY l.wallet_id
)`);

// $3: held past this instant fails (null: not checked). Held reservations are few (the calls in flight and
// the leases) and indexed (reservations_held_expiry), whatever the table's size.
const HOLDS_SQL = examplesOf(`
failed AS (
  SELECT 'expired_hold' AS check_name, r.wallet_id, NULL::text AS lot_id, r.id AS reservation_id
    FROM reservations r
   WHERE r.state = 'held' AND $3::timestamptz IS NOT NULL AND r.expires_at < $3::timestamptz AND ${inScope('r.wallet_id')}
     AND (r.kept_at IS NULL OR r.kept_at < $3::timestamptz - interval '${KEPT_HOLD_MS} milliseconds')
  UNION ALL
  SELECT 'hold_lots', r.wallet_id, NULL, r.id
    FROM reservations r
   WHERE r.state = 'held' AND ${inScope('r.wallet_id')}
     AND r.amount_nano <> coalesce((SELECT sum(rl.amount_nano) FROM reservation_lots rl WHERE rl.reservation_id = r.id), 0)
)`);

interface FailedRow {
  check_name: LedgerCheck;
  wallet_id: string;
  lot_id: string | null;
  reservation_id: string | null;
  failures: string;
}

/** Runs every check once (two statements) and says which failed, where. A query that fails throws. */
export async function checkLedger(db: Queryable, opts: LedgerAuditOptions): Promise<LedgerAudit> {
  const scope = opts.walletIds ? [...opts.walletIds] : null;
  const examples = opts.examples ?? 5;
  const before = opts.heldExpiredBefore?.toISOString() ?? null;
  const rows: FailedRow[] = [];
  rows.push(...(await db.query<FailedRow>(JOURNAL_SQL, [scope, examples])).rows);
  rows.push(...(await db.query<FailedRow>(HOLDS_SQL, [scope, examples, before])).rows);

  const audit: LedgerAudit = { ok: true, failures: {}, examples: {} };
  for (const check of LEDGER_CHECKS) if (check !== 'expired_hold' || before !== null) audit.failures[check] = 0;
  for (const r of rows) {
    audit.ok = false;
    audit.failures[r.check_name] = Number(r.failures);
    const example: LedgerExample = { walletId: r.wallet_id };
    if (r.lot_id !== null) example.lotId = r.lot_id;
    if (r.reservation_id !== null) example.reservationId = r.reservation_id;
    (audit.examples[r.check_name] ??= []).push(example);
  }
  return audit;
}

/** How many sweep intervals a hold may stay held past its expiry before the audit counts it. */
export const HOLD_GRACE_SWEEPS = 3;
export const DEFAULT_AUDIT_INTERVAL_MS = 300_000;

interface LedgerAuditorOptions {
  db: Queryable;
  clock: Clock;
  holdGraceMs: number;
  /** Read at each use, so the log can be the app's once it exists. */
  log: () => MoneyLog;
  /** Turns shared with the other processes on the database (audit-turn.ts). */
  turn: AuditTurn;
}

export interface AuditTurn {
  /** Takes the turn if it is due: true for the one process that audits now. */
  take(intervalMs: number): Promise<boolean>;
  /** What this turn's audit found, for every process's metrics. */
  publish(run: LedgerAuditRun): Promise<void>;
  /** The last audit any process published; null before the first. */
  latest(): Promise<LedgerAuditRun | null>;
}

export interface LedgerAuditRun extends LedgerAudit {
  /** When it completed (the gateway's clock). */
  at: Date;
  durationMs: number;
}

/** The periodic audit of one process: one run at a time; a failed check is logged at error, a failed query at warn. */
export class LedgerAuditor {
  private lastRun: LedgerAuditRun | null = null;
  private running: Promise<LedgerAuditRun | null> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: LedgerAuditorOptions) {}

  /** The last completed audit; null before the first (or while every one so far could not run). */
  last(): LedgerAuditRun | null {
    return this.lastRun;
  }

  /** Audits now, or joins the audit already running; null when its queries failed (logged). Never throws. */
  run(): Promise<LedgerAuditRun | null> {
    this.running ??= this.runOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Ticks every `intervalMs` (0: never), the first one interval after the start. */
  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.tick(intervalMs), intervalMs);
    this.timer.unref();
  }

  /** One tick of the timer: audit when it is this process's turn, else take up what the last turn found. */
  async tick(intervalMs: number): Promise<void> {
    const { turn, log } = this.opts;
    try {
      if (await turn.take(intervalMs)) {
        const run = await this.run();
        if (run) await turn.publish(run);
      } else {
        this.lastRun = (await turn.latest()) ?? this.lastRun;
      }
    } catch (err) {
      log().warn({ err }, 'ledger audit turn could not be read or written');
    }
  }

  /** No more audits; resolves once the one running (if any) has ended, so the database can close after it. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private async runOnce(): Promise<LedgerAuditRun | null> {
    const { db, clock, holdGraceMs, log } = this.opts;
    const started = performance.now();
    let audit: LedgerAudit;
    try {
      audit = await checkLedger(db, { heldExpiredBefore: new Date(clock.now().getTime() - holdGraceMs) });
    } catch (err) {
      // The ledger is not known to be wrong: the last result stands, and its time shows how old it is.
      log().warn({ err }, 'ledger audit could not run');
      return null;
    }
    const run: LedgerAuditRun = { ...audit, at: clock.now(), durationMs: Math.round(performance.now() - started) };
    this.lastRun = run;
    if (!run.ok) {
      const checks = LEDGER_CHECKS.filter((c) => (run.failures[c] ?? 0) > 0);
      log().error({ checks, failures: run.failures, examples: run.examples, durationMs: run.durationMs }, 'ledger audit failed');
    }
    return run;
  }
}
