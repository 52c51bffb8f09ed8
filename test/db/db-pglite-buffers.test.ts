// The embedded database's shared buffers (engine/db/pglite.ts): PostgreSQL's default of 128 MB is WASM memory
// PGlite holds for the process's life, far more than the gateway's working set. A new data folder is created
// with the smaller size (engine/db/pglite-init.ts) and keeps initdb's own settings; a folder created before
// that runs with it from its next start; a size an operator chose is left alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterEach, expect, it } from 'vitest';
import { EMBEDDED_SHARED_BUFFERS, openPglite } from '../../engine/db/pglite.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const dataFolder = () => {
  const d = mkdtempSync(join(tmpdir(), 'gw-pglite-buffers-'));
  dirs.push(d);
  return d;
};
const setting = async (dir: string, name: string): Promise<string> => {
  const db = await openPglite({ dataDir: dir });
  try {
    return (await db.query<{ v: string }>(`SELECT current_setting('${name}') AS v`)).rows[0]!.v;
  } finally {
    await db.close();
  }
};

it('runs a new data folder with the smaller shared buffers from its first start, its time zone unchanged', async () => {
  const dir = dataFolder();
  expect(await setting(dir, 'shared_buffers')).toBe(EMBEDDED_SHARED_BUFFERS);
  expect(await setting(dir, 'shared_buffers')).toBe(EMBEDDED_SHARED_BUFFERS);
  expect(await setting(dir, 'TimeZone')).toBe('UTC');
  expect(await setting(dir, 'DateStyle')).toBe('ISO, MDY');
}, 60_000);

it('runs a folder created in the process (before the child did it) with them from its next start', async () => {
  const dir = dataFolder();
  await (await PGlite.create(dir)).close();
  expect(await setting(dir, 'shared_buffers')).toBe('128MB');
  expect(await setting(dir, 'shared_buffers')).toBe(EMBEDDED_SHARED_BUFFERS);
}, 60_000);

it('keeps a size an operator set', async () => {
  const dir = dataFolder();
  const db = await openPglite({ dataDir: dir });
  await db.query(`ALTER SYSTEM SET shared_buffers = '64MB'`);
  await db.close();
  expect(await setting(dir, 'shared_buffers')).toBe('64MB');
  expect(await setting(dir, 'shared_buffers')).toBe('64MB');
}, 60_000);
