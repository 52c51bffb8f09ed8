// A PostgreSQL server of the test's own (initdb in a temp folder, its own port), so a test can stop and restart
// the database under load without touching the shared server other tests use. PostgreSQL refuses to run as
// root, so when the tests run as root the server runs as the `postgres` user (runuser).
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PrivatePostgres {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server for good and removes its folder. */
  destroy(): Promise<void>;
}

/** The newest PostgreSQL server binaries on this machine, or null when there are none. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(a) - Number(b));
  return versions.length ? join(root, versions[versions.length - 1]!, 'bin') : null;
}

function asServerUser(bin: string, args: string[]): [string, string[]] {
  return userInfo().uid === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

async function waitUntilAnswering(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.end();
      return;
    } catch (e) {
      await c.end().catch(() => {});
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function startPrivatePostgres(port: number): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  const dir = mkdtempSync('/tmp/gateway-pg-');
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const run = (tool: string, args: string[]) => {
    const [cmd, argv] = asServerUser(join(bin, tool), args);
    execFileSync(cmd, argv, { stdio: 'pipe' });
  };
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const start = async () => {
    const [cmd, argv] = asServerUser(join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']);
    await new Promise<void>((resolve, reject) => {
      const p = spawn(cmd, argv, { stdio: 'ignore' });
      p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl start exited ${code}`))));
    });
    await waitUntilAnswering(url);
  };
  const stop = async () => {
    // fast: running transactions are cut, every client gets 57P01, as in an operator's restart.
    run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  };
  await start();
  return {
    url,
    start,
    stop,
    async destroy() {
      try {
        await stop();
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
