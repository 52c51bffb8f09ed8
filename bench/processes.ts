// Child processes of the bench and what /proc says about them: CPU time (utime + stime) and memory (VmRSS,
// VmHWM). Every wait is bounded, and every child is stopped by its own pid.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export interface Child {
  name: string;
  child: ChildProcess;
  pid: number;
  match: RegExpMatchArray;
  output(): string;
  stop(): Promise<void>;
}

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux; /proc/PID/stat counts in these

/** Starts `node [nodeArgs] script`, resolving once its output matches `ready` (within `timeoutMs`). */
export function startNode(
  name: string,
  script: string,
  opts: { env?: Record<string, string>; ready: RegExp; nodeArgs?: string[]; args?: string[]; cwd?: string; timeoutMs?: number },
): Promise<Child> {
  const nodeArgs = opts.nodeArgs ?? ['--import', 'tsx'];
  const child = spawn(process.execPath, [...nodeArgs, script, ...(opts.args ?? [])], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString('utf8');
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killed = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killed);
  };
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      clearInterval(poll);
      clearTimeout(deadline);
      void stop();
      reject(new Error(`${name} ${why}:\n${out.slice(-4000)}`));
    };
    const deadline = setTimeout(() => fail(`not ready in ${(opts.timeoutMs ?? 60_000) / 1000} s`), opts.timeoutMs ?? 60_000);
    const poll = setInterval(() => {
      const m = out.match(opts.ready);
      if (!m) return;
      clearInterval(poll);
      clearTimeout(deadline);
      child.removeListener('exit', onEarlyExit);
      resolve({ name, child, pid: child.pid!, match: m, output: () => out, stop });
    }, 25);
    const onEarlyExit = (code: number | null) => fail(`exited with ${code} before it was ready`);
    child.once('exit', onEarlyExit);
  });
}

/** CPU seconds (user + system) a process has used so far; NaN once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may itself hold spaces.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** The pids a process started (a GATEWAY_WORKERS primary's workers). */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The pids of every running PostgreSQL server process (postmaster and backends). */
export function postgresPids(): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim().startsWith('postgres')) pids.push(Number(d));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return pids;
}

export interface PostgresCpu {
  byPid: Map<number, number>;
  /** CPU seconds spent since `earlier` by the processes alive now (a backend that ended meanwhile is lost: a floor). */
  secondsSince(earlier: PostgresCpu): number;
}

/** CPU seconds of every PostgreSQL process now alive, per pid. */
export function postgresCpu(): PostgresCpu {
  const byPid = new Map<number, number>();
  for (const pid of postgresPids()) {
    const s = cpuSeconds(pid);
    if (!Number.isNaN(s)) byPid.set(pid, s);
  }
  return {
    byPid,
    secondsSince(earlier) {
      let sum = 0;
      for (const [pid, s] of byPid) sum += s - (earlier.byPid.get(pid) ?? 0);
      return sum;
    },
  };
}

/** Resident memory now and its high-water mark, in MB. */
export function memoryMb(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

/** Samples a process's RSS every `everyMs` until stopped; the samples, in MB. */
export function sampleRss(pid: number, everyMs: number): { stop(): number[] } {
  const samples: number[] = [memoryMb(pid).rss];
  const timer = setInterval(() => samples.push(memoryMb(pid).rss), everyMs);
  return {
    stop() {
      clearInterval(timer);
      samples.push(memoryMb(pid).rss);
      return samples.filter((s) => !Number.isNaN(s));
    },
  };
}

/** A port on 127.0.0.1 that was free a moment ago, below Linux's ephemeral range (where outgoing connections take theirs). */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port found between 20000 and 32000');
}
