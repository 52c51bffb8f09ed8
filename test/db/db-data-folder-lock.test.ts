// The embedded data folder's lock is the folder's, whatever path reaches it: a symlink, or a bind mount, which
// has a path of its own (a second gateway there started beside the first and removed its files).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DataFolderHeld, lockDataFolder, lockName } from '../../engine/db/data-folder-lock.ts';

const root = mkdtempSync(join(tmpdir(), 'gw-lock-'));
const folder = join(root, 'data');
const bound = join(root, 'bound');
mkdirSync(folder);
mkdirSync(bound);
/** Whether this machine lets the test bind-mount (root, with mount available); the reason when not. */
const bindMount = (() => {
  try {
    execFileSync('mount', ['--bind', folder, bound], { stdio: 'pipe' });
    return { ok: true as const };
  } catch (e) {
    return { ok: false as const, reason: String((e as Error).message).split('\n')[0] };
  }
})();
afterAll(() => {
  if (bindMount.ok) execFileSync('umount', [bound]);
  rmSync(root, { recursive: true, force: true });
});

describe.runIf(process.platform === 'linux')('the data folder lock', () => {
  it('is named the same through a symlink', () => {
    const link = join(root, 'link');
    symlinkSync(folder, link);
    expect(lockName(link)).toBe(lockName(folder));
  });

  it('differs between two folders', () => {
    expect(lockName(folder)).not.toBe(lockName(root));
  });

  it.runIf(bindMount.ok)('is named the same through a bind mount, so a second holder there is refused', async () => {
    expect(lockName(bound)).toBe(lockName(folder));
    const lock = await lockDataFolder(folder, 'gateway');
    try {
      await expect(lockDataFolder(bound, 'gateway')).rejects.toBeInstanceOf(DataFolderHeld);
    } finally {
      await lock.release();
    }
  });

  it.runIf(!bindMount.ok)(`bind mount not tried here: ${bindMount.ok ? '' : bindMount.reason}`, () => {});
});
