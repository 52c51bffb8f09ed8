// Issue 26: each applied migration is recorded with its checksum; an applied file edited since stops the
// start naming it (it was skipped silently); a database migrated before checksums gets them on its next start.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../../engine/db/db.ts';
import { loadMigrations, MIGRATIONS_DIR, migrate, migrationChecksum } from '../../engine/db/migrate.ts';
import { openPglite } from '../../engine/db/pglite.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fresh(): Promise<{ db: Db; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-migrations-'));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  const db = await openPglite();
  cleanups.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => db.close(),
  );
  return { db, dir };
}

const append = (dir: string, name: string, text: string) => writeFileSync(join(dir, name), readFileSync(join(dir, name), 'utf8') + text);

describe('migration checksums', () => {
  it('records a checksum per applied migration and stops on an applied file edited since, naming it', async () => {
    const { db, dir } = await fresh();
    const all = loadMigrations(dir);
    expect(await migrate(db, { dir })).toEqual(all.map((m) => m.name));
    const rows = (await db.query<{ name: string; checksum: string }>('SELECT name, checksum FROM schema_migrations ORDER BY name')).rows;
    expect(rows).toEqual(all.map((m) => ({ name: m.name, checksum: m.checksum })));
    expect(await migrate(db, { dir })).toEqual([]);

    append(dir, '003_videos.sql', '\n-- edited after it was applied\nALTER TABLE video_jobs ADD COLUMN edited int;\n');
    await expect(migrate(db, { dir })).rejects.toThrow(/^migration 003_videos\.sql was changed after it was applied/);
  });

  it('takes the same text with CRLF line endings as the same migration', () => {
    expect(migrationChecksum('CREATE TABLE a (x int);\r\nSELECT 1;\r\n')).toBe(migrationChecksum('CREATE TABLE a (x int);\nSELECT 1;\n'));
  });

  it('gives a database migrated before checksums its checksums, then guards them', async () => {
    const { db, dir } = await fresh();
    await migrate(db, { dir });
    // As such a database is: the table without the column.
    await db.query('ALTER TABLE schema_migrations DROP COLUMN checksum');
    expect(await migrate(db, { dir })).toEqual([]);
    const missing = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM schema_migrations WHERE checksum IS NULL');
    expect(missing.rows[0]!.n).toBe('0');
    append(dir, '005_wallets_created.sql', '\nSELECT 1;\n');
    await expect(migrate(db, { dir })).rejects.toThrow(/migration 005_wallets_created\.sql was changed/);
  });

  it('applies a new migration after the applied ones; refuses one numbered before them, or a shared number', async () => {
    const { db, dir } = await fresh();
    await migrate(db, { dir });
    writeFileSync(join(dir, '900_later.sql'), 'CREATE TABLE later_one (x int);');
    expect(await migrate(db, { dir })).toEqual(['900_later.sql']);
    writeFileSync(join(dir, '004_b_sneaked_in.sql'), 'CREATE TABLE early_one (x int);');
    await expect(migrate(db, { dir })).rejects.toThrow(
      'migrations 004_b_sneaked_in.sql and 004_reservations_key_held.sql share the number 004',
    );
    rmSync(join(dir, '004_b_sneaked_in.sql'));
    writeFileSync(join(dir, '850_early.sql'), 'CREATE TABLE early_one (x int);');
    await expect(migrate(db, { dir })).rejects.toThrow(/migration 850_early\.sql is new but sorts before 900_later\.sql/);
  });
});
