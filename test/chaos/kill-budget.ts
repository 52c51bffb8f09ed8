// The SIGKILL fault kind (kill-charged.ts) with a school's budget in the mix: each run's wallet has a lot that
// keeps, one that expires in a day and one that expires in the middle of the burst, and half its keys belong
// to a class (a key group) whose monthly and daily limits are below what the burst's calls may use, so some are
// refused 429. On PostgreSQL a second gateway serves half the calls on the same wallet while the first is killed.
//
// Beside the kind's own promise (every answer received in full charged once, at its price; none twice; no hold
// left; the ledger audit whole), after the runs, per wallet:
// - no money created: what the lots were given is what they have, hold, were charged and saw expire;
// - the expiring lot's remainder is gone (nothing available or reserved; given = charged + expired), the
//   journal's `expire` moves match the audit trail's `credits.expired` entries, and nothing was taken from it
//   after its `expires_at` but for calls admitted before it (docs/money.md, "Lots that expire");
// - each key's use is within its monthly limit, and the class's within its monthly one (checked at call start
//   against the most a call may use, under a lock on the class: exact on any number of processes);
// - the class's day within its daily limit, up to the contract's overshoot (interface.md, "Quota accounting is
//   approximate"): a process counts its own calls in flight, so calls sent at once to two processes may pass it
//   together; the overshoot is then at most what the smaller process's share of the class used.
import { describe } from 'vitest';
import { expireDueLots } from '../../engine/money/lot-expiry.ts';
import { type AuditReport, formatUsd } from '../helpers/auditor.ts';
import { postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';
import { takenAfterExpiry } from '../helpers/ledger.ts';
import type { ChaosCall, ChaosContext, ChaosTarget, FaultCase } from './harness.ts';
import { KILL_CALLS_PER_RUN, killChargedFault } from './kill-charged.ts';
import { type KillDatabase, type KillTarget, startKillTarget } from './kill-target.ts';
import { defineChaosSuite } from './suite.ts';

const NANO_PER_CREDIT = 1_000n;
/** The lot that keeps: far above a run's calls, so no answer is charged short for want of money. */
const KEEPS_CREDITS = 100_000_000;
/** The lot that expires in the burst: below a lease's least slice (100,000), so a lease holds all of it. */
const SOON_CREDITS = 40_000;
const LATER_CREDITS = 40_000;
/**
 * A run's class: 8 of its 16 calls, holding some 56,000 credits together (a chat b-5 call about 4,030, a
 * messages a-top one about 10,030, for 400 output tokens); its limits let about two thirds of them in.
 */
const CLASS_MONTH_CREDITS = 45_000;
const CLASS_DAY_CREDITS = 40_000;
/** Each key's own month: one call's most, so it binds only a key that would make a second call. */
const KEY_MONTH_CREDITS = 12_000;

/**
 * Answers of some 150 words: a call then uses most of what it holds (400 output tokens), so the class's use comes
 * near its limits, which are checked against holds; and the streams' ends spread over a second, past the expiry.
 */
const longer = (body: Record<string, unknown>): Record<string, unknown> =>
  JSON.parse(JSON.stringify(body).replace('[[sim:long=12]]', '[[sim:long=150]]'));

/** Calls 0, 1, 4, 5 … of a run (every door, streaming and not) are the class's. */
const inClass = (index: number) => index % 4 < 2;
/** The expiring lot lapses this long after the calls start: 300 ms to 1.05 s, while answers are arriving. */
const expiresAfterMs = (run: number) => 300 + (run % 4) * 250;

interface RunBudget {
  run: number;
  groupId: string;
  soonLotId: string | null;
  expiresAt: Date | null;
  /** Key id → the index of its call in the run. */
  keyIndex: Map<string, number>;
}

export const budgetFaultName = (database: KillDatabase, processes: number) =>
  `gateway SIGKILLed under load with expiring lots and a class's limits, every answer received in full is charged (${database === 'postgres' ? 'PostgreSQL' : 'PGlite'}, ${processes} process${processes > 1 ? 'es' : ''}, leases on)`;

/** The kill target's chaos target, making each run's wallet with its lots and class, and its keys in it or not. */
function budgetTarget(k: () => KillTarget, budgets: Map<string, RunBudget>): ChaosTarget {
  const base = () => k().target;
  return {
    get url() {
      return base().url;
    },
    get sim() {
      return base().sim;
    },
    get db() {
      return base().db;
    },
    // Absent where the kill target has none: the harness then counts holds in the database itself.
    heldCount: base().heldCount,
    beforeAudit: base().beforeAudit,
    async newWallet() {
      const id = await base().newWallet(KEEPS_CREDITS);
      await k().admin('POST', `/admin/v1/wallets/${id}/credits`, {
        credits: LATER_CREDITS,
        expires_at: new Date(Date.now() + 86_400_000).toISOString(),
      });
      const group = await k().admin<{ id: string }>(
        'POST',
        '/v1/key-groups',
        { name: '3학년 2반', monthly_limit_credits: CLASS_MONTH_CREDITS, daily_limit_credits: CLASS_DAY_CREDITS },
        k().managementKey(id),
      );
      budgets.set(id, { run: budgets.size, groupId: group.id, soonLotId: null, expiresAt: null, keyIndex: new Map() });
      return id;
    },
    async newApiKey(walletId, name) {
      const b = budgets.get(walletId)!;
      const index = Number(name.replace(/^chaos-/, ''));
      const body = { name, monthly_limit_credits: KEY_MONTH_CREDITS, ...(inClass(index) ? { group_id: b.groupId } : {}) };
      const r = await k().admin<{ data: { id: string; key: string }[] }>('POST', '/v1/keys', body, k().managementKey(walletId));
      b.keyIndex.set(r.data[0]!.id, index);
      return { id: r.data[0]!.id, key: r.data[0]!.key };
    },
    // Right before the calls, so the lot lapses while they run, not while the keys are made.
    async beforeCalls(walletId) {
      const b = budgets.get(walletId)!;
      const expiresAt = new Date(Date.now() + expiresAfterMs(b.run));
      const lot = await k().admin<{ lot_id: string }>('POST', `/admin/v1/wallets/${walletId}/credits`, {
        credits: SOON_CREDITS,
        expires_at: expiresAt.toISOString(),
      });
      b.soonLotId = lot.lot_id;
      b.expiresAt = expiresAt;
    },
  };
}

/** What the runs showed of the budget, printed beside the kind's own summary. */
interface BudgetFigures {
  soonPaidNano: bigint;
  expiredNano: bigint;
  classUseNano: bigint[];
  overshootNano: bigint;
}

/** The checks of the file's head comment, for every run's wallet; one line per problem. */
export async function budgetProblems(
  ctx: Omit<ChaosContext, 'run'>,
  calls: readonly ChaosCall[],
  budgets: Map<string, RunBudget>,
  processes: number,
): Promise<{ problems: string[]; figures: BudgetFigures }> {
  const problems: string[] = [];
  const figures: BudgetFigures = { soonPaidNano: 0n, expiredNano: 0n, classUseNano: [], overshootNano: 0n };
  const ids = [...budgets.keys()];
  // The last gateway was stopped gracefully before the audit (on PostgreSQL, the process not killed): what its
  // leases gave back to an expired lot then had no pass after it, so the test runs the one a live process would.
  await expireDueLots(ctx.db, 'chaos-audit', new Date(), (e) => problems.push(`expiry pass: ${String(e)}`));
  problems.push(...(await moneyCreated(ctx, ids)));
  const useByKey = new Map<string, bigint>();
  const records = await ctx.db.query<{ key_id: string; charged: string }>(
    `SELECT key_id, sum(charged_nano)::text AS charged FROM usage_records WHERE wallet_id = ANY($1) GROUP BY key_id`,
    [ids],
  );
  for (const r of records.rows) useByKey.set(r.key_id, BigInt(r.charged));
  for (const [walletId, b] of budgets) {
    const lot = await soonLotProblems(ctx, walletId, b);
    problems.push(...lot.problems);
    figures.soonPaidNano += lot.paidNano;
    figures.expiredNano += lot.expiredNano;
    const use = classProblems(walletId, b, useByKey, processes);
    problems.push(...use.problems);
    figures.classUseNano.push(use.useNano);
    figures.overshootNano += use.overshootNano;
  }
  if (figures.soonPaidNano === 0n) problems.push('no expiring lot paid for anything: the runs did not exercise the order of expiry');
  if (calls.length !== budgets.size * KILL_CALLS_PER_RUN) problems.push(`${calls.length} calls for ${budgets.size} runs`);
  return { problems, figures };
}

/** Per wallet: Σ given = Σ (available + reserved + expired) + Σ charged (the journal's settles). */
async function moneyCreated(ctx: Omit<ChaosContext, 'run'>, ids: string[]): Promise<string[]> {
  const r = await ctx.db.query<{ wallet_id: string; given: string; kept: string; charged: string }>(
    `SELECT l.wallet_id, sum(l.granted_nano)::text AS given,
            sum(l.available_nano + l.reserved_nano + l.expired_nano)::text AS kept,
            (SELECT coalesce(sum(j.amount_nano), 0) FROM ledger_journal j WHERE j.wallet_id = l.wallet_id AND j.kind = 'settle')::text AS charged
       FROM credit_lots l WHERE l.wallet_id = ANY($1) GROUP BY l.wallet_id`,
    [ids],
  );
  const out: string[] = [];
  for (const w of r.rows) {
    const created = BigInt(w.kept) + BigInt(w.charged) - BigInt(w.given);
    if (created !== 0n)
      out.push(`wallet ${w.wallet_id}: ${formatUsd(created)} created (given ${w.given}, kept ${w.kept}, charged ${w.charged})`);
  }
  return out;
}

/** The expiring lot: nothing left, given = charged + expired, the trail says so, nothing taken after expires_at. */
async function soonLotProblems(ctx: Omit<ChaosContext, 'run'>, walletId: string, b: RunBudget) {
  const problems: string[] = [];
  if (!b.soonLotId || !b.expiresAt) return { problems: [`wallet ${walletId}: no expiring lot was added`], paidNano: 0n, expiredNano: 0n };
  const lot = (
    await ctx.db.query<{ granted: string; available: string; reserved: string; expired: string; paid: string; expire_moves: string }>(
      `SELECT granted_nano::text AS granted, available_nano::text AS available, reserved_nano::text AS reserved,
              expired_nano::text AS expired,
              (SELECT coalesce(sum(amount_nano), 0) FROM ledger_journal WHERE lot_id = l.id AND kind = 'settle')::text AS paid,
              (SELECT count(*) FROM ledger_journal WHERE lot_id = l.id AND kind = 'expire')::text AS expire_moves
         FROM credit_lots l WHERE l.id = $1`,
      [b.soonLotId],
    )
  ).rows[0]!;
  const at = `lot ${b.soonLotId} (wallet ${walletId}, expired ${b.expiresAt.toISOString()})`;
  if (BigInt(lot.available) !== 0n || BigInt(lot.reserved) !== 0n)
    problems.push(`${at}: remainder not gone: ${lot.available} available, ${lot.reserved} reserved`);
  if (BigInt(lot.paid) + BigInt(lot.expired) !== BigInt(lot.granted))
    problems.push(`${at}: given ${lot.granted} ≠ charged ${lot.paid} + expired ${lot.expired}`);
  const trail = await ctx.db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM wallet_audit WHERE wallet_id = $1 AND action = 'credits.expired' AND target_id = $2 AND actor_kind = 'system'`,
    [walletId, b.soonLotId],
  );
  if (trail.rows[0]!.n !== lot.expire_moves) problems.push(`${at}: ${lot.expire_moves} expire moves, ${trail.rows[0]!.n} audit entries`);
  const late = await takenAfterExpiry(ctx.db, walletId, b.soonLotId, b.expiresAt);
  problems.push(...late.problems.map((p) => `${at}: ${p}`));
  return { problems, paidNano: BigInt(lot.paid), expiredNano: BigInt(lot.expired) };
}

/** Each key within its month; the class within its month, and its day up to the overshoot two processes allow. */
function classProblems(walletId: string, b: RunBudget, useByKey: Map<string, bigint>, processes: number) {
  const problems: string[] = [];
  const perProcess = Array.from({ length: processes }, () => 0n);
  for (const [keyId, index] of b.keyIndex) {
    const use = useByKey.get(keyId) ?? 0n;
    if (use > BigInt(KEY_MONTH_CREDITS) * NANO_PER_CREDIT) problems.push(`key ${keyId}: used ${formatUsd(use)}, above its month`);
    if (inClass(index)) perProcess[index % processes]! += use;
  }
  const useNano = perProcess.reduce((a, n) => a + n, 0n);
  const month = BigInt(CLASS_MONTH_CREDITS) * NANO_PER_CREDIT;
  const day = BigInt(CLASS_DAY_CREDITS) * NANO_PER_CREDIT;
  if (useNano > month) problems.push(`class of wallet ${walletId}: used ${formatUsd(useNano)}, above its month ${formatUsd(month)}`);
  // One process counts its own calls in flight against the day: only another process's share may pass it.
  const allowed = processes > 1 ? perProcess.reduce((a, n) => (n < a ? n : a)) : 0n;
  const overshootNano = useNano > day ? useNano - day : 0n;
  if (overshootNano > allowed)
    problems.push(
      `class of wallet ${walletId}: used ${formatUsd(useNano)} today, above its day ${formatUsd(day)} by more than ${formatUsd(allowed)}`,
    );
  return { problems, useNano, overshootNano };
}

/** The kill kind with the budget: calls spread over the processes, the budget checked after the kind's own checks. */
function budgetFault(
  k: () => KillTarget,
  database: KillDatabase,
  processes: 1 | 2,
  table: string,
  budgets: Map<string, RunBudget>,
): FaultCase {
  const kill = killChargedFault(k, database, true, table);
  const name = budgetFaultName(database, processes);
  return {
    ...kill,
    name,
    client: (call, ctx, index) => kill.client!({ ...call, url: k().urls[index % processes]!, body: longer(call.body) }, ctx, index),
    async check(ctx, calls, report: AuditReport) {
      const own = await kill.check!(ctx, calls, report);
      const { problems, figures } = await budgetProblems(ctx, calls, budgets, processes);
      const uses = figures.classUseNano.map((n) => Number(n / NANO_PER_CREDIT));
      console.log(
        `${name}: expiring lots paid ${formatUsd(figures.soonPaidNano)} and saw ${formatUsd(figures.expiredNano)} expire; ` +
          `class use per run ${Math.min(...uses)}–${Math.max(...uses)} credits (month ${CLASS_MONTH_CREDITS}, day ${CLASS_DAY_CREDITS}), ` +
          `day overshoot ${formatUsd(figures.overshootNano)}; ${problems.length} budget problem(s)`,
      );
      return [...own, ...problems];
    },
  };
}

/**
 * The kind on one database, `runs` runs of 16 calls, leases on (a class's calls are held per call, the others
 * ride leases). PostgreSQL: two processes, the first killed; skipped when it does not answer, unless REQUIRE_POSTGRES=1.
 */
export function defineKillBudgetSuites(database: KillDatabase, variant: { fast: boolean; runs: number }): void {
  const processes = database === 'postgres' ? 2 : 1;
  const skip = database === 'postgres' && !postgresAvailability.ok && !REQUIRE_POSTGRES;
  const file = `kill-budget${variant.fast ? '-fast' : ''}-${database}.md`;
  (skip ? describe.skip : describe)(`${database}, ${processes} process(es), expiring lots and a class`, () => {
    let k: KillTarget | null = null;
    const budgets = new Map<string, RunBudget>();
    defineChaosSuite({
      title: `Chaos, answers received in full are charged, with expiring lots and a class${variant.fast ? ', fast' : ''} (${database})`,
      file: `chaos-${file}`,
      runs: variant.runs,
      start: async () => {
        k = await startKillTarget(database, { leases: true, processes });
        return { target: budgetTarget(() => k!, budgets), database, close: () => k!.close() };
      },
      faults: [budgetFault(() => k!, database, processes, file, budgets)],
      callsPerRun: KILL_CALLS_PER_RUN,
      msPerRun: 30_000,
    });
  });
}
