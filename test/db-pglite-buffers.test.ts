// The embedded database's shared buffers (engine/db/pglite.ts): PostgreSQL's default of 128 MB is WASM memory
// PGlite holds for the process's life, far more than the gateway's working set. A data folder is set to the
// smaller size on its first start and runs with it from the next, keeping initdb's own settings; a size an
// operator chose is left alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { EMBEDDED_SHARED_BUFFERS, openPglite } from '../engine/db/pglite.ts';

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

it('runs a data folder with the smaller shared buffers from its second start, its time zone unchanged', async () => {
  const dir = dataFolder();
  expect(await setting(dir, 'shared_buffers')).toBe('128MB'); // the first start: PostgreSQL's default
  expect(await setting(dir, 'shared_buffers')).toBe(EMBEDDED_SHARED_BUFFERS);
  expect(await setting(dir, 'TimeZone')).toBe('UTC');
  expect(await setting(dir, 'DateStyle')).toBe('ISO, MDY');
}, 60_000);

it('keeps a size an operator set', async () => {
  const dir = dataFolder();
  const db = await openPglite({ dataDir: dir });
  await db.query(`ALTER SYSTEM SET shared_buffers = '64MB'`);
  await db.close();
  expect(await setting(dir, 'shared_buffers')).toBe('64MB');
  expect(await setting(dir, 'shared_buffers')).toBe('64MB');
}, 60_000);
