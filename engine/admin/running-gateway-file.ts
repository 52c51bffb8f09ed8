// The file a gateway on the embedded database writes in its data folder while it runs (its address and an admin
// credential for this start): PGlite is single-process, so operator tools talk to the running gateway's admin API
// instead of opening a copy it never sees. Readable by the owner only, as it holds a credential.
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const RUNNING_GATEWAY_FILE = 'gateway.json';

export interface RunningGatewayFile {
  /** Where the admin API answers, e.g. http://127.0.0.1:8080. */
  url: string;
  pid: number;
  /** Accepted by the admin API as its bearer token for as long as this process runs. */
  admin_token: string;
}

/**
 * A fresh admin credential for this start, or null: only a gateway on the embedded database in a folder on disk
 * writes this file, so only its operator tools need to come through its admin API.
 */
export function localAdminTokenFor(embedded: boolean, dataDir: string): string | null {
  return embedded && dataDir !== 'memory://' ? `gwl-${randomBytes(24).toString('base64url')}` : null;
}

export function writeRunningGatewayFile(dataDir: string, info: RunningGatewayFile): void {
  const path = join(dataDir, RUNNING_GATEWAY_FILE);
  rmSync(path, { force: true }); // a left-over file may have looser permissions; mode applies on creation only
  writeFileSync(path, JSON.stringify(info, null, 2), { mode: 0o600, flag: 'wx' });
}

/** Removes the file only when it is this process's (a second gateway may have written its own since). */
export function removeRunningGatewayFile(dataDir: string, pid = process.pid): void {
  const found = readRunningGatewayFile(dataDir);
  if (found && found.pid === pid) rmSync(join(dataDir, RUNNING_GATEWAY_FILE), { force: true });
}

export function readRunningGatewayFile(dataDir: string): RunningGatewayFile | null {
  let text: string;
  try {
    text = readFileSync(join(dataDir, RUNNING_GATEWAY_FILE), 'utf8');
  } catch {
    return null;
  }
  try {
    const v = JSON.parse(text) as Partial<RunningGatewayFile>;
    if (typeof v.url === 'string' && typeof v.pid === 'number' && typeof v.admin_token === 'string') return v as RunningGatewayFile;
  } catch {
    /* a half-written or foreign file: treated as present but unusable below */
  }
  return { url: '', pid: 0, admin_token: '' };
}

/** Whether a process with this id is alive (signal 0 checks without signalling). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
