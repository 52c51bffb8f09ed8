// The gateway's data folder holds the embedded ledger, webhook secrets, kept charges and stored videos: only the
// user the gateway runs as may enter it. The embedded database writes its files 0666 whatever the umask, so the
// folders' own modes are what keep other local users out.
import { chmodSync, mkdirSync, statSync } from 'node:fs';

/** Makes `dir` (and any missing parent) for the gateway's user alone, and takes group and others' access from it. */
export function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if ((statSync(dir).mode & 0o077) === 0) return;
  try {
    chmodSync(dir, 0o700);
  } catch (e) {
    // Another user's folder (an operator's own choice, as a shared mount): left as it is.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') throw e;
  }
}
