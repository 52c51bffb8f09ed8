// The fault kind "gateway SIGKILLed under load, every answer received in full is charged": the promise that an
// answer a client received in full is charged, whatever happens to the process afterwards. A non-streaming
// body, and a stream's end marker, may leave the gateway only once the call's charge and usage record are
// committed; so a process killed at any moment after a client has the whole answer must still have charged it.
//
// Each run: calls in flight through a child gateway (kill-target.ts), started a few ms apart so some finish at
// any moment; the gateway is SIGKILLed at a varying moment (a fixed delay in some runs, right after the k-th
// answer was received in full in the others: the moment the promise is about) and started again. The client
// records per call its x-request-id and whether it received the answer in full. After the runs, the database
// read directly: each answer received in full has exactly one usage record under its request id, charged the
// catalog price of the usage the simulator produced, and the auditor's charge of the call (journal) agrees.
// Calls cut by the kill may be charged or not (the auditor's loss lines are dropped for them), never twice.
import { mkdirSync, writeFileSync } from 'node:fs';
import { describe } from 'vitest';
import { type AuditReport, type CallAudit, formatUsd } from '../helpers/auditor.ts';
import { postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';
import type { ChaosCall, ChaosContext, FaultCase } from './harness.ts';
import { type KillDatabase, type KillTarget, LEASE_TTL_MS, RESERVATION_TTL_MS, startKillTarget } from './kill-target.ts';
import { type ChaosSuiteOptions, defineChaosSuite } from './suite.ts';

export const KILL_CALLS_PER_RUN = 16;
/** Calls start this far apart, so their ends spread over the run and some are always about to finish. */
const STAGGER_MS = 4;

export const killFaultName = (database: KillDatabase, leases: boolean): string =>
  `gateway SIGKILLed under load, every answer received in full is charged (${database === 'postgres' ? 'PostgreSQL' : 'PGlite'}, leases ${leases ? 'on' : 'off'})`;

/** What the client saw of one call. */
interface Seen {
  requestId: string | null;
  status: number;
  /** A plain 200 whose body parsed as JSON, or a stream whose end marker arrived. */
  full: boolean;
}

/** The line that ends a stream on each door; an answer without it was not received in full. */
const END_MARKER: Record<ChaosCall['path'], string> = {
  '/v1/chat/completions': 'data: [DONE]',
  '/v1/messages': 'event: message_stop',
  '/v1/responses': 'event: response.completed',
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Whether `text` holds `marker` as a whole line (its newline arrived too). */
const hasLine = (text: string, marker: string) =>
  text
    .split(/\r?\n/)
    .slice(0, -1)
    .some((l) => l === marker);

/** When a run kills: `delayMs` after the first call, or after the `afterFull`-th answer (of `kind`) received in full. */
interface KillPlan {
  afterFull: number;
  kind: 'any' | 'stream';
  delayMs: number;
}

/**
 * Two of three plans aim at the moment the promise is about, right after an answer left the gateway, where a
 * charge written behind the reply is still in flight: runs 0, 3, 6 … kill at once when the k-th stream's end
 * marker (1–4 of 8) arrived; runs 1, 4 … once the k-th answer of any kind (1–8 of 16) was received in full,
 * plus 0–8 ms (a plain answer comes first, so this kind rarely lands on a stream's end). Each waits a few
 * seconds at most, should too few answers arrive. Runs 2, 5 … kill after a delay from the first call (20–920
 * ms: a freshly started child answers its first calls after some 300 ms and its last streams after about a
 * second on the loaded machine), so the kill also lands anywhere else in the calls' lives. The fast variant's
 * two runs are the first two plans.
 */
function killPlan(run: number): KillPlan {
  const turn = Math.floor(run / 3);
  if (run % 3 === 0) return { afterFull: 1 + (turn % 4), kind: 'stream', delayMs: 0 };
  if (run % 3 === 1) return { afterFull: 1 + (turn % 8), kind: 'any', delayMs: (turn % 5) * 2 };
  return { afterFull: 0, kind: 'any', delayMs: 20 + (turn % 7) * 150 };
}

/** `table`: the file under test/artifacts/ that lists the calls that broke the promise. */
export function killChargedFault(k: () => KillTarget, database: KillDatabase, leases: boolean, table: string): FaultCase {
  const name = killFaultName(database, leases);
  const seen = new Map<string, Seen>();
  // The answers received in full so far in the current run (all, and streams), and who waits for the k-th.
  const fullInRun = { any: 0, stream: 0 };
  let waiter: { k: number; kind: KillPlan['kind']; wake: () => void } | null = null;
  const noteFull = (stream: boolean) => {
    fullInRun.any++;
    if (stream) fullInRun.stream++;
    if (waiter && fullInRun[waiter.kind] >= waiter.k) waiter.wake();
  };

  const client = async (call: ChaosCall, _ctx: ChaosContext, index: number) => {
    await sleep(index * STAGGER_MS);
    const s: Seen = { requestId: null, status: 0, full: false };
    seen.set(call.tag, s);
    try {
      const res = await fetch(call.url + call.path, { method: 'POST', headers: call.headers, body: JSON.stringify(call.body) });
      s.status = res.status;
      s.requestId = res.headers.get('x-request-id');
      if (!call.shape.stream) {
        const text = await res.text();
        if (res.status === 200) {
          JSON.parse(text);
          s.full = true;
          noteFull(false);
        }
        return;
      }
      // Read as it comes: the end marker counts once it arrived, even if the connection breaks after it.
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (!s.full && res.status === 200 && hasLine(text, END_MARKER[call.path])) {
          s.full = true;
          noteFull(true);
        }
      }
    } catch {
      /* cut by the kill, or refused while the gateway was down: not received in full */
    }
  };

  const during = async (ctx: ChaosContext) => {
    fullInRun.any = fullInRun.stream = 0;
    const plan = killPlan(ctx.run);
    if (plan.afterFull > 0) {
      await Promise.race([
        new Promise<void>((wake) => (waiter = { k: plan.afterFull, kind: plan.kind, wake })),
        sleep(KILL_CALLS_PER_RUN * STAGGER_MS + 3_000),
      ]);
      waiter = null;
    }
    await sleep(plan.delayMs);
    await k().killAndRestart();
  };

  const check = async (ctx: Omit<ChaosContext, 'run'>, calls: readonly ChaosCall[], report: AuditReport): Promise<string[]> => {
    const problems: string[] = [];
    const audits = new Map<string, CallAudit>(report.calls.map((a) => [a.tag, a]));
    const walletIds = [...new Set(calls.map((c) => c.walletId))];
    const records = await ctx.db.query<{ request_id: string; n: string; charged: string }>(
      `SELECT request_id, count(*)::text AS n, sum(charged_nano)::text AS charged FROM usage_records WHERE wallet_id = ANY($1) GROUP BY request_id`,
      [walletIds],
    );
    const byRequest = new Map(records.rows.map((r) => [r.request_id, { n: Number(r.n), charged: BigInt(r.charged) }]));
    const mode = `${database === 'postgres' ? 'PostgreSQL' : 'PGlite'}, leases ${leases ? 'on' : 'off'}`;
    const rows: string[] = [];
    let full = 0;
    let uncharged = 0;
    let wrong = 0;
    let twice = 0;
    for (const call of calls) {
      const s = seen.get(call.tag) ?? { requestId: null, status: 0, full: false };
      const a = audits.get(call.tag)!;
      const rec = s.requestId ? byRequest.get(s.requestId) : undefined;
      const what = `request ${s.requestId ?? '(no answer head)'} (${call.shape.door}, ${call.shape.stream ? 'stream' : 'plain'}, ${call.shape.name}; ${mode}; call ${call.tag})`;
      const row = (verdict: string) =>
        `| ${s.requestId} | ${call.shape.door} | ${call.shape.stream ? 'stream' : 'plain'} | ${call.shape.name} | ${mode} | ${rec?.n ?? 0} | ${formatUsd(rec?.charged ?? 0n)} | ${formatUsd(a.chargedNano)} | ${formatUsd(a.expectedNano)} | ${verdict} |`;
      if (rec && rec.n > 1) {
        twice++;
        problems.push(`${what}: ${rec.n} usage records for one call (charged twice)`);
        rows.push(row('charged twice'));
      }
      if (!s.full) continue;
      full++;
      if (a.class !== 'answered') {
        wrong++;
        problems.push(
          `${what}: received in full, but the simulator saw no complete answer with usage (${a.class}: ${a.deliveries.join(', ')})`,
        );
        rows.push(row(`vendor ${a.class}`));
      } else if (!rec) {
        uncharged++;
        problems.push(`${what}: received in full, no usage record: charged ${formatUsd(a.chargedNano)} of ${formatUsd(a.expectedNano)}`);
        rows.push(row('no charge'));
      } else if (rec.charged !== a.expectedNano || a.chargedNano !== a.expectedNano) {
        wrong++;
        problems.push(
          `${what}: received in full, record charged ${formatUsd(rec.charged)}, journal ${formatUsd(a.chargedNano)}, catalog price ${formatUsd(a.expectedNano)}`,
        );
        rows.push(row('charged wrong'));
      }
    }
    const statuses = new Map<string, number>();
    for (const c of calls) {
      const st = String(seen.get(c.tag)?.status || 'none');
      statuses.set(st, (statuses.get(st) ?? 0) + 1);
    }
    const heads = [...statuses].map(([st, n]) => `${st}: ${n}`).join(', ');
    const summary = `${name}: ${calls.length} calls (answer status ${heads}), ${full} received in full; of those ${uncharged} without a charge, ${wrong} charged wrong; ${twice} charged twice`;
    console.log(summary);
    writeFailureTable(table, summary, rows);
    return problems;
  };

  return {
    name,
    client,
    during,
    check,
    // The killed process's holds expire, then the next one sweeps them (every 200 ms).
    settleMs: Math.max(RESERVATION_TTL_MS, LEASE_TTL_MS) + 5_000,
    // Calls cut by the kill may go uncharged: the auditor's loss lines are reported, not failed. Answers
    // received in full are checked on their own above, with no bound.
    lossBound: (n) => n,
  };
}

/** One row per call that broke the promise, under the run's summary. */
function writeFailureTable(file: string, summary: string, rows: string[]): void {
  const head = '| request id | door | stream | call | mode | usage records | record charge | journal charge | catalog price | verdict |';
  const rule = '|---|---|---|---|---|---:|---:|---:|---:|---|';
  mkdirSync('test/artifacts', { recursive: true });
  const text = `# ${summary}\n\n${rows.length ? [head, rule, ...rows].join('\n') : 'No call broke the promise.'}\n`;
  writeFileSync(`test/artifacts/${file}`, text);
}

/** The lease modes that run: KILL_LEASES=on,off (default both). */
const leaseModes = (): boolean[] => (process.env.KILL_LEASES ?? 'on,off').split(',').map((m) => m.trim() === 'on');

/**
 * The kind on one database, one suite per lease mode (each its own child gateway and config), `runs` runs.
 * PostgreSQL is skipped when it does not answer, as describeEachDatabase does, unless REQUIRE_POSTGRES=1.
 */
export function defineKillChargedSuites(database: KillDatabase, variant: { fast: boolean; runs: number }): void {
  for (const leases of leaseModes()) {
    const label = `${database}, leases ${leases ? 'on' : 'off'}`;
    const skip = database === 'postgres' && !postgresAvailability.ok && !REQUIRE_POSTGRES;
    (skip ? describe.skip : describe)(label, () => {
      defineChaosSuite({
        title: `Chaos, answers received in full are charged${variant.fast ? ', fast' : ''} (${label})`,
        file: `chaos-kill-charged${variant.fast ? '-fast' : ''}-${database}-leases-${leases ? 'on' : 'off'}.md`,
        runs: variant.runs,
        ...killChargedSuite(database, leases, `kill-charged${variant.fast ? '-fast' : ''}-${database}-leases-${leases ? 'on' : 'off'}.md`),
      });
    });
  }
}

/** One suite's gateway (a child on the database, leases on or off) and its one fault kind. */
function killChargedSuite(
  database: KillDatabase,
  leases: boolean,
  table: string,
): Pick<ChaosSuiteOptions, 'start' | 'faults' | 'callsPerRun' | 'msPerRun'> {
  let k: KillTarget | null = null;
  return {
    start: async () => {
      k = await startKillTarget(database, { leases });
      return { target: k.target, database, close: () => k!.close() };
    },
    faults: [killChargedFault(() => k!, database, leases, table)],
    callsPerRun: KILL_CALLS_PER_RUN,
    // A run waits for a gateway to start again: ~5 s on PostgreSQL, ~11 s on the embedded database (loaded machine).
    msPerRun: 30_000,
  };
}
