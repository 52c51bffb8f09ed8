// One embedded data folder, one process: a second PGlite opening the same folder corrupts what they share. The lock
// is an abstract Unix socket named after the folder's device and inode, which the kernel frees the moment its
// holder dies, where a pid file needs a liveness guess (docs/decisions/embedded-database.md).
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';

interface FolderHolder {
  pid: number;
  /** What holds it: `gateway`, or the operator command's name. */
  role: string;
}

/** Another live process holds the folder: the message says which and what to do instead. */
export class DataFolderHeld extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: FolderHolder | null,
  ) {
    const who = holder ? `process ${holder.pid} (${holder.role})` : 'another process';
    super(
      `the embedded database in ${dataDir} is in use by ${who}: one embedded data folder serves one process. ` +
        `Operator commands (npx gateway wallet …) go through a running gateway by themselves; ` +
        `to run a second gateway give it its own GATEWAY_DATA_DIR, or share PostgreSQL (DATABASE_URL) between processes` +
        (holder ? `; to stop the holder: kill -TERM ${holder.pid}.` : '.'),
    );
    this.name = 'DataFolderHeld';
  }
}

export interface DataFolderLock {
  release(): Promise<void>;
}

const LOCK_FILE = 'gateway.lock';

/** Takes the folder for this process, or throws DataFolderHeld. The folder must exist. */
export async function lockDataFolder(dataDir: string, role: string): Promise<DataFolderLock> {
  const me: FolderHolder = { pid: process.pid, role };
  return process.platform === 'linux' ? lockWithSocket(dataDir, me) : lockWithFile(dataDir, me);
}

/**
 * The abstract socket name of a folder: the same for every path that reaches it. Named after the folder's
 * identity on its file system (device and inode), not its path: a bind mount reaches the same folder by a path
 * of its own, and a second process opening it there would write beside the first.
 */
export function lockName(dataDir: string): string {
  const { dev, ino } = statSync(realpathSync(resolve(dataDir)), { bigint: true });
  return `\0ai-gateway-data-${createHash('sha256').update(`${dev}:${ino}`).digest('hex').slice(0, 32)}`;
}

async function lockWithSocket(dataDir: string, me: FolderHolder): Promise<DataFolderLock> {
  const name = lockName(dataDir);
  const server: Server = createServer((socket) => socket.end(JSON.stringify(me)));
  server.unref(); // the lock never keeps the process alive by itself
  try {
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(name, () => {
        server.off('error', fail);
        ok();
      });
    });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
    throw new DataFolderHeld(dataDir, await askHolder(name));
  }
  return { release: () => new Promise<void>((done) => server.close(() => done())) };
}

/** Who holds the socket, as it says; null when it does not say within a second. */
function askHolder(name: string): Promise<FolderHolder | null> {
  return new Promise((done) => {
    let text = '';
    const socket = createConnection(name);
    const give = (holder: FolderHolder | null) => {
      socket.destroy();
      done(holder);
    };
    socket.setTimeout(1_000, () => give(null));
    socket.on('data', (d) => (text += d));
    socket.on('error', () => give(null));
    socket.on('end', () => {
      try {
        const h = JSON.parse(text) as FolderHolder;
        give(Number.isInteger(h.pid) ? h : null);
      } catch {
        give(null);
      }
    });
  });
}

async function lockWithFile(dataDir: string, me: FolderHolder): Promise<DataFolderLock> {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, JSON.stringify(me), { flag: 'wx' });
      return { release: async () => releaseFile(path) };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = readHolder(path);
    if (holder && alive(holder.pid)) throw new DataFolderHeld(dataDir, holder);
    rmSync(path, { force: true }); // its process is gone: the folder is free
  }
  throw new DataFolderHeld(dataDir, readHolder(path));
}

function releaseFile(path: string): void {
  if (readHolder(path)?.pid === process.pid) rmSync(path, { force: true });
}

function readHolder(path: string): FolderHolder | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as FolderHolder;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
