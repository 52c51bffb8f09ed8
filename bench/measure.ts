// One measured row: the load process runs against a target while /proc says what each process of the run
// spent in CPU and how the target's memory moved. Rows are the bench's unit of record (bench/results/*.json).
import type { CallKind } from './calls.ts';
import type { LoadRequest, LoadResult, LoadSpec } from './load.ts';
import type { LoadClient } from './load-client.ts';
import { cpuSeconds, memoryMb, postgresCpu, sampleRss } from './processes.ts';

export type TargetName = 'direct' | 'floor' | 'peer' | 'gateway-postgres' | 'gateway-postgres-workers' | 'gateway-pglite';

export interface Row {
  /** `${target}/${what}/${plain|stream}/c${connections}[/spread]`: what the smoke test and the table look rows up by. */
  id: string;
  target: TargetName;
  /** slow-streams-cold: the same burst as slow-streams, run first on the target, opening the connections the second reuses. */
  what: CallKind | 'slow-streams' | 'slow-streams-cold' | 'soak';
  stream: boolean;
  connections: number;
  wallet: 'hot' | 'spread' | 'none';
  load: LoadResult;
  /** Percent of one core over the row's wall time, per process (postgres: every server process, whoever loads it). */
  cpuPercent: Record<string, number>;
  /**
   * Rows PostgreSQL wrote (inserted + updated + deleted, pg_stat_database) from the row's start until its
   * background work was written too; only on the rows that ask for it (RowPlan.countRows).
   */
  dbRowsWritten?: number;
  /** The target process's memory during the row: samples' first, last and peak, and its lifetime high-water mark. */
  rssMb?: { start: number; end: number; peak: number; hwm: number; samples: number[] };
  /** The round of the paired rows (bench/rounds.ts) this row belongs to; absent for the run's own rows. */
  round?: number;
}

export const rowId = (target: TargetName, what: Row['what'], stream: boolean, connections: number, wallet: Row['wallet'], round?: number) =>
  `${target}/${what}/${stream ? 'stream' : 'plain'}/c${connections}${wallet === 'spread' ? '/spread' : ''}${round ? `/round${round}` : ''}`;

export interface Watched {
  /** Process name → pid, read before and after each row. */
  pids: Record<string, number>;
  /** The process whose memory the row follows (the gateway or the peer). */
  memoryOf?: number | undefined;
  withPostgres: boolean;
  /** The database's rows written so far (pg_stat_database), for the rows that count them. */
  rowsWritten?: (() => Promise<number>) | undefined;
}

export interface RowPlan {
  target: TargetName;
  what: Row['what'];
  stream: boolean;
  wallet: Row['wallet'];
  url: string;
  requests: LoadRequest[];
  connections: number;
  /** closed loop for this long, or … */
  seconds?: number;
  /** … this many requests at once. */
  burst?: number;
  rssEveryMs?: number;
  /** Count the rows the database wrote for this row's calls, background work included (slow: waits for the stats). */
  countRows?: boolean;
  /** The round of the paired rows (bench/rounds.ts). */
  round?: number;
}

export async function measure(loader: LoadClient, plan: RowPlan, watched: Watched): Promise<Row> {
  const spec: LoadSpec = {
    url: plan.url,
    mode: plan.burst ? 'burst' : 'closed',
    requests: plan.requests,
    connections: plan.connections,
    ...(plan.burst ? { count: plan.burst } : { seconds: plan.seconds }),
  };
  const timeoutMs = ((plan.seconds ?? 0) + 120) * 1000;
  const pids = { ...watched.pids };
  const before: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) before[name] = cpuSeconds(pid);
  // Settled before as after: the previous row's last writes reach the statistics up to ten seconds late.
  const rowsBefore = plan.countRows && watched.rowsWritten ? await settledCount(watched.rowsWritten) : undefined;
  const pgBefore = watched.withPostgres ? postgresCpu() : undefined;
  const rss = watched.memoryOf ? sampleRss(watched.memoryOf, plan.rssEveryMs ?? 250) : undefined;
  let samples: number[] | undefined;
  let load: LoadResult;
  try {
    load = await loader.run(spec, timeoutMs);
  } finally {
    samples = rss?.stop();
  }
  // Over the load's own window (reading a spec and writing a result around it take next to nothing).
  const wall = load.seconds;
  const cpuPercent: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) cpuPercent[name] = round1(((cpuSeconds(pid) - before[name]!) / wall) * 100);
  // The load measures itself in microseconds over exactly its window; /proc counts 10 ms ticks, too coarse for short rows.
  cpuPercent.load = round1((load.cpuSeconds / wall) * 100);
  if (pgBefore) cpuPercent.postgres = round1((postgresCpu().secondsSince(pgBefore) / wall) * 100);
  const dbRowsWritten =
    rowsBefore === undefined || !watched.rowsWritten ? undefined : (await settledCount(watched.rowsWritten)) - rowsBefore;
  return {
    ...(dbRowsWritten === undefined ? {} : { dbRowsWritten }),
    id: rowId(plan.target, plan.what, plan.stream, plan.connections, plan.wallet, plan.round),
    ...(plan.round ? { round: plan.round } : {}),
    target: plan.target,
    what: plan.what,
    stream: plan.stream,
    connections: plan.connections,
    wallet: plan.wallet,
    load,
    cpuPercent,
    ...(samples && watched.memoryOf
      ? {
          rssMb: {
            start: samples[0]!,
            end: samples.at(-1)!,
            peak: Math.max(...samples),
            hwm: memoryMb(watched.memoryOf).hwm,
            samples: plan.what === 'soak' ? samples.map(round1) : [],
          },
        }
      : {}),
  };
}

/**
 * The count once the gateway's background writes and PostgreSQL's statistics have caught up: a busy backend
 * reports its counts at most once a second, and one gone idle within ten seconds (PGSTAT_IDLE_INTERVAL). So the
 * count is read for eleven seconds at least, and until it stays the same for two (at most 25).
 */
async function settledCount(read: () => Promise<number>): Promise<number> {
  let last = await read();
  for (let waited = 0, still = 0; waited < 25_000 && (waited < 11_000 || still < 2); waited += 1_000) {
    await new Promise((r) => setTimeout(r, 1_000));
    const now = await read();
    still = now === last ? still + 1 : 0;
    last = now;
  }
  return last;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
