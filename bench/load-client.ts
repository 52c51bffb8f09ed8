// The bench's side of the load process (bench/load.ts): one child for the whole run, one spec at a time, each
// bounded in time (past it the child is killed and the row fails).
import { type ChildProcess, spawn } from 'node:child_process';
import type { LoadResult, LoadSpec } from './load.ts';

export interface LoadClient {
  pid: number;
  run(spec: LoadSpec, timeoutMs: number): Promise<LoadResult>;
  close(): Promise<void>;
}

export function startLoadClient(): LoadClient {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'bench/load.ts'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err = (err + d).slice(-4000)));
  let buffered = '';
  let waiting: ((line: string) => void) | undefined;
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString('utf8');
    const nl = buffered.indexOf('\n');
    if (nl < 0) return;
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    const w = waiting;
    waiting = undefined;
    w?.(line);
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    pid: child.pid!,
    run(spec, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`load did not finish in ${timeoutMs / 1000} s:\n${err}`));
        }, timeoutMs);
        const gone = () => reject(new Error(`load process ended:\n${err}`));
        child.once('exit', gone);
        waiting = (line) => {
          clearTimeout(timer);
          child.removeListener('exit', gone);
          const answer = JSON.parse(line) as LoadResult | { failed: string };
          if ('failed' in answer) reject(new Error(`load failed: ${answer.failed}`));
          else resolve(answer);
        };
        child.stdin!.write(`${JSON.stringify(spec)}\n`);
      });
    },
    async close() {
      child.stdin!.end();
      const killed = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killed);
    },
  };
}
