// The data folder holds the embedded ledger, webhook secrets, kept charges and stored videos; the embedded database
// writes its files 0666 whatever the umask. A security attack found `npm start`'s ./data made 0755, so any local
// user could read and change the ledger. The folders are now the gateway user's alone, and a folder made before
// with group or others' access is closed when the gateway opens it.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../engine/db/open.ts';
import { ChargeSpool } from '../../engine/money/charge-spool.ts';
import { createDiskVideoFiles } from '../../engine/videos/files-disk.ts';

const root = mkdtempSync(join(tmpdir(), 'gw-private-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('the data folder is the gateway user’s alone', () => {
  it('the embedded database: made 0700, and an existing 0755 folder closed to 0700', async () => {
    const made = join(root, 'made', 'data');
    const db = await openDatabase({ dataDir: made, skipMigrations: true });
    await db.close();
    expect(modeOf(made)).toBe(0o700);

    const existing = join(root, 'existing');
    mkdirSync(existing);
    chmodSync(existing, 0o755);
    const again = await openDatabase({ dataDir: existing, skipMigrations: true });
    await again.close();
    expect(modeOf(existing)).toBe(0o700);
  }, 60_000);

  it('the kept charges and the stored videos', () => {
    const data = join(root, 'beside-postgres');
    expect(new ChargeSpool(join(data, 'charges'), 'owner-1').unwritable()).toBeNull();
    expect(modeOf(join(data, 'charges'))).toBe(0o700);
    expect(modeOf(data)).toBe(0o700);
    createDiskVideoFiles(data);
    expect(modeOf(join(data, 'videos'))).toBe(0o700);
  });
});
