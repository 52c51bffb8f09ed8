// The ledger auditor of the chaos suite. After a batch of calls it reads the ledger tables directly (not the
// ledger's own code) and the simulator's outcome records, and checks five invariants:
//   1. the journal adds up to the balance columns, per wallet and per lot (and a held reservation's lots add
//      up to its amount);
//   2. no hold outlives its call (no reservation still `held`);
//   3. every call the vendor answered is charged exactly once, at the price of the vendor's usage;
//   4. nothing is charged for a call the vendor refused (or never answered);
//   5. no wallet or lot went below zero.
// 1 and 5 are the production audit's SQL (engine/money/audit.ts), limited to the audited wallets: one
// definition of what a whole ledger is.
// Calls are told apart by key: the harness gives each call its own API key, and a reservation carries its key.
// A call matches its vendor requests by the `[[sim:call=ID]]` tag in its prompt (simulator/README.md).
import type { Db } from '../../engine/db/db.ts';
import { checkLedger, type LedgerCheck, type LedgerExample } from '../../engine/money/audit.ts';
import type { Outcome, UsageBuckets } from '../../simulator/index.ts';

/** USD per 1M tokens, per bucket (copied from the catalog by the caller, not read through the gateway). */
export interface BucketPrices {
  input: number;
  output: number;
  cache_read?: number;
  cache_write?: number;
}

export interface AuditedCall {
  /** The `[[sim:call=ID]]` id in the call's prompt. */
  tag: string;
  walletId: string;
  /** The call's own API key: its reservations are the call's. */
  keyId: string;
  model: string;
}

export interface AuditInput {
  db: Db;
  walletIds: readonly string[];
  calls: readonly AuditedCall[];
  outcomes: readonly Outcome[];
  pricesOf(model: string): BucketPrices;
}

/**
 * - `answered`: the vendor delivered a complete answer with its usage; it bills that usage, so the call must be
 *   charged exactly that.
 * - `estimated`: the vendor produced something but the gateway cannot know its bill: an answer without usage,
 *   or a stream broken off (or left by its client, and the vendor saw it). The gateway settles from its own
 *   estimate: it must charge something (a vendor's work is never free) and at most the hold. How far the
 *   estimate is from the vendor's real usage, where the simulator knows it, is reported as `estimateGapNano`.
 * - `refused`: no vendor request delivered anything usable: nothing may be charged.
 */
export type CallClass = 'answered' | 'estimated' | 'refused';

export interface CallAudit {
  tag: string;
  class: CallClass;
  expectedNano: bigint;
  chargedNano: bigint;
  reservations: { state: string; amountNano: bigint; chargedNano: bigint | null }[];
  deliveries: string[];
}

export interface AuditFigures {
  calls: number;
  answered: number;
  estimated: number;
  refused: number;
  /** Vendor-answered work charged less than its price (nano-USD). */
  lostNano: bigint;
  /** Of the lost money, what was lost because the wallet could not cover the charge (capped at its balance). */
  cappedNano: bigint;
  /** Charged above the vendor's work, or charged for refused calls (nano-USD). */
  createdNano: bigint;
  /** What the estimated calls were charged (not lost or created: the gateway cannot know the vendor's bill). */
  estimatedNano: bigint;
  /** Σ (estimate − the vendor's real usage) over estimated calls whose real usage the simulator knows. */
  estimateGapNano: bigint;
  holdsLeft: number;
  negativeWallets: number;
  /** Calls charged through a budget lease (no reservation of their own). */
  leased: number;
}

export interface AuditReport {
  figures: AuditFigures;
  /** One readable line per broken invariant; empty when all hold. */
  problems: string[];
  calls: CallAudit[];
}

const NANO_PER_USD = 1_000_000_000n;

/** tokens × USD-per-1M, in nano-USD, rounded up as the vendor's bill would be to the next nano. */
function tokensNano(tokens: number, perMtok: number | undefined, fallback: number): bigint {
  const price = perMtok ?? fallback;
  // Prices are given to the nano per 1M tokens (9 decimals at most): scale to integers before multiplying.
  const scaled = BigInt(Math.round(price * 1e9));
  const n = BigInt(tokens) * scaled;
  const den = 1_000_000n;
  return (n + den - 1n) / den;
}

export function usageCostNano(usage: UsageBuckets, p: BucketPrices): bigint {
  return (
    tokensNano(usage.input, p.input, p.input) +
    tokensNano(usage.output, p.output, p.output) +
    tokensNano(usage.cache_read, p.cache_read, p.input) +
    tokensNano(usage.cache_write, p.cache_write, p.input)
  );
}

const usd = (nano: bigint) => `${nano < 0n ? '-' : ''}$${(Number(nano < 0n ? -nano : nano) / Number(NANO_PER_USD)).toFixed(9)}`;

interface ReservationRow {
  key_id: string | null;
  wallet_id: string;
  state: string;
  amount_nano: string;
  charged_nano: string | null;
  settled_nano: string;
}

export async function auditLedger(input: AuditInput): Promise<AuditReport> {
  const { db, walletIds } = input;
  const problems: string[] = [];
  const ids = [...walletIds];

  // 1 and 5: balances against the journal, wallets and lots, and nothing below zero (every hold's expiry is
  // left to 2, which wants none held at all).
  const ledger = await checkLedger(db, { walletIds: ids, heldExpiredBefore: null, examples: 1_000 });
  for (const check of Object.keys(ledger.examples) as LedgerCheck[]) {
    for (const where of ledger.examples[check]!) problems.push(ledgerProblem(check, where));
  }
  const negativeWallets = ledger.failures.negative_balance ?? 0;
  const wallets = await db.query<{ id: string; available_nano: string }>(
    `SELECT w.id, coalesce((SELECT sum(l.available_nano) FROM credit_lots l WHERE l.wallet_id = w.id), 0)::text AS available_nano
       FROM wallets w WHERE w.id = ANY($1)`,
    [ids],
  );
  if (wallets.rows.length !== ids.length) problems.push(`audited ${ids.length} wallets, found ${wallets.rows.length}`);

  // 2: holds left, and each reservation's settled money from the journal (not from its charged column).
  const reservations = await db.query<ReservationRow>(
    `SELECT r.key_id, r.wallet_id, r.state, r.amount_nano, r.charged_nano,
            COALESCE((SELECT SUM(j.amount_nano) FROM ledger_journal j WHERE j.reservation_id = r.id AND j.kind = 'settle'), 0) AS settled_nano
       FROM reservations r WHERE r.wallet_id = ANY($1)`,
    [ids],
  );
  const holdsLeft = reservations.rows.filter((r) => r.state === 'held').length;
  if (holdsLeft > 0) problems.push(`${holdsLeft} hold(s) outlived their calls`);
  const byKey = new Map<string, ReservationRow[]>();
  for (const r of reservations.rows) {
    if (r.key_id === null) continue;
    byKey.set(r.key_id, [...(byKey.get(r.key_id) ?? []), r]);
  }
  // A call admitted on a budget lease has no reservation of its own: its charge is a draw on the lease, and
  // its usage record (written in the draw's transaction) names its key and what it was charged. Those records
  // must add up to the lease draws in the journal.
  const recordsByKey = new Map<string, bigint>();
  const records = await db.query<{ key_id: string; wallet_id: string; charged: string }>(
    `SELECT key_id, wallet_id, SUM(charged_nano)::text AS charged FROM usage_records WHERE wallet_id = ANY($1) GROUP BY key_id, wallet_id`,
    [ids],
  );
  const leasedCharges = new Map<string, bigint>();
  for (const r of records.rows) {
    if (byKey.has(r.key_id)) continue;
    recordsByKey.set(r.key_id, BigInt(r.charged));
    leasedCharges.set(r.wallet_id, (leasedCharges.get(r.wallet_id) ?? 0n) + BigInt(r.charged));
  }
  const draws = await db.query<{ wallet_id: string; drawn: string }>(
    `SELECT r.wallet_id, SUM(j.amount_nano)::text AS drawn FROM reservations r JOIN ledger_journal j ON j.reservation_id = r.id AND j.kind = 'settle'
      WHERE r.wallet_id = ANY($1) AND r.key_id IS NULL AND r.call_id LIKE 'lease:%' GROUP BY r.wallet_id`,
    [ids],
  );
  for (const id of ids) {
    const drawn = BigInt(draws.rows.find((d) => d.wallet_id === id)?.drawn ?? 0);
    const recorded = leasedCharges.get(id) ?? 0n;
    if (drawn !== recorded) problems.push(`wallet ${id}: lease draws ${usd(drawn)} ≠ the usage records of leased calls ${usd(recorded)}`);
  }
  const available = new Map(wallets.rows.map((w) => [w.id, BigInt(w.available_nano)]));

  // 3 and 4: each call against what its vendor requests delivered.
  const figures: AuditFigures = {
    calls: input.calls.length,
    answered: 0,
    estimated: 0,
    refused: 0,
    lostNano: 0n,
    cappedNano: 0n,
    createdNano: 0n,
    estimatedNano: 0n,
    estimateGapNano: 0n,
    holdsLeft,
    negativeWallets,
    leased: 0,
  };
  const audits: CallAudit[] = [];
  const outcomesByTag = new Map<string, Outcome[]>();
  for (const o of input.outcomes) if (o.callTag !== null) outcomesByTag.set(o.callTag, [...(outcomesByTag.get(o.callTag) ?? []), o]);
  for (const call of input.calls) {
    const outcomes = outcomesByTag.get(call.tag) ?? [];
    const rows = byKey.get(call.keyId) ?? [];
    const charged = rows.length > 0 ? rows.reduce((a, r) => a + BigInt(r.settled_nano), 0n) : (recordsByKey.get(call.keyId) ?? 0n);
    if (rows.length === 0 && recordsByKey.has(call.keyId)) figures.leased += 1;
    const complete = outcomes.filter((o) => o.delivered === 'complete' && o.usage !== null);
    const unreported = complete.some((o) => !o.usageReported);
    const cls: CallClass =
      complete.length > 0 && !unreported
        ? 'answered'
        : unreported || outcomes.some((o) => o.delivered === 'partial')
          ? 'estimated'
          : 'refused';
    const expected = complete.reduce((a, o) => a + usageCostNano(o.usage!, input.pricesOf(call.model)), 0n);
    const audit: CallAudit = {
      tag: call.tag,
      class: cls,
      expectedNano: expected,
      chargedNano: charged,
      reservations: rows.map((r) => ({
        state: r.state,
        amountNano: BigInt(r.amount_nano),
        chargedNano: r.charged_nano === null ? null : BigInt(r.charged_nano),
      })),
      deliveries: outcomes.map(
        (o) => `${o.route}:${o.fault ?? 'ok'}:${o.delivered}${o.usageReported ? '' : o.delivered === 'complete' ? '(no usage)' : ''}`,
      ),
    };
    audits.push(audit);
    figures[cls] += 1;
    const where = `call ${call.tag} (${call.model}; vendor: ${audit.deliveries.join(', ') || 'never reached'})`;
    if (rows.length > 1) problems.push(`${where}: ${rows.length} reservations for one call`);
    const settledRows = rows.filter((r) => BigInt(r.settled_nano) > 0n);
    if (settledRows.length > 1) problems.push(`${where}: charged ${settledRows.length} times`);
    for (const r of rows) {
      if (r.charged_nano !== null && BigInt(r.charged_nano) !== BigInt(r.settled_nano)) {
        problems.push(`${where}: reservation says charged ${r.charged_nano}, journal settled ${r.settled_nano}`);
      }
    }
    if (cls === 'estimated') {
      figures.estimatedNano += charged;
      if (unreported) figures.estimateGapNano += charged - expected;
      // (A leased call's hold lived in its process's memory: the lease bounds it, the audit cannot.)
      const held = rows.reduce((a, r) => a + BigInt(r.amount_nano), 0n);
      if (rows.length > 0 && charged > held) problems.push(`${where}: an estimated charge ${usd(charged)} above its hold ${usd(held)}`);
      if (charged === 0n) {
        if (unreported) figures.lostNano += expected;
        problems.push(`${where}: the vendor's work was charged nothing${unreported ? ` (its real usage cost ${usd(expected)})` : ''}`);
      }
      continue;
    }
    if (charged > expected) {
      figures.createdNano += charged - expected;
      const why = cls === 'refused' ? 'charged for a call the vendor never answered' : 'charged above the vendor’s usage';
      problems.push(`${where}: ${why}: expected ${usd(expected)}, charged ${usd(charged)}`);
    } else if (charged < expected) {
      figures.lostNano += expected - charged;
      const capped = (available.get(call.walletId) ?? 0n) === 0n;
      if (capped) figures.cappedNano += expected - charged;
      problems.push(
        `${where}: vendor-answered work charged short: expected ${usd(expected)}, charged ${usd(charged)}${capped ? ' (capped at the wallet’s balance)' : ''}`,
      );
    }
  }
  return { figures, problems, calls: audits };
}

/** One problem line per place a check of the ledger audit failed. */
function ledgerProblem(check: LedgerCheck, at: LedgerExample): string {
  switch (check) {
    case 'wallet_journal':
      return `wallet ${at.walletId}: its lots ≠ its journal`;
    case 'lot_journal':
      return `lot ${at.lotId}: balance columns ≠ journal`;
    case 'negative_balance':
      return `wallet ${at.walletId}: below zero${at.lotId ? ` (lot ${at.lotId})` : ''}`;
    case 'expired_hold':
      return `reservation ${at.reservationId}: held past its expiry`;
    case 'hold_lots':
      return `reservation ${at.reservationId}: held amount ≠ what its lots hold`;
  }
}

/** Throws with every broken invariant, one per line (at most `limit`), when there is any. */
export function assertClean(report: AuditReport, label: string, limit = 25): void {
  if (report.problems.length === 0) return;
  const shown = report.problems.slice(0, limit);
  const more = report.problems.length > limit ? `\n… and ${report.problems.length - limit} more` : '';
  const f = report.figures;
  throw new Error(
    `ledger audit of ${label}: ${report.problems.length} problem(s); lost ${usd(f.lostNano)}, created ${usd(f.createdNano)}, holds left ${f.holdsLeft}\n` +
      shown.map((p) => `  - ${p}`).join('\n') +
      more,
  );
}

export { usd as formatUsd };
