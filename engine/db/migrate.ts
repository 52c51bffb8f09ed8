// Applies engine/db/migrations/*.sql in filename order, each once, in one transaction behind an advisory lock so
// processes starting together apply them once. An applied file edited since stops the start: the database holds what
// it said then, and skipping it silently hid the difference.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { projectPath } from '../core/project-path.ts';
import type { Db, Queryable } from './db.ts';

export const MIGRATIONS_DIR = projectPath(import.meta.url, 'engine/db/migrations');

/**
 * Numeric prefixes that two files share from before the prefixes were checked; both names are applied in
 * existing databases, so neither can be renamed. Any other shared prefix is refused when the files are read.
 */
const SHARED_PREFIXES_KEPT = new Set(['005']);

interface Migration {
  name: string;
  sql: string;
  /** sha256 of the text, line endings made LF (a checkout that writes CRLF is the same migration). */
  checksum: string;
}

/** The migration files do not fit the database (or each other): the start stops with this message alone. */
export class MigrationMismatch extends Error {
  override name = 'MigrationMismatch';
}

export const migrationChecksum = (sql: string): string => createHash('sha256').update(sql.replace(/\r\n/g, '\n')).digest('hex');

export function loadMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  const byPrefix = new Map<string, string>();
  for (const name of names) {
    const prefix = /^(\d+)_/.exec(name)?.[1];
    if (!prefix)
      throw new MigrationMismatch(`migration ${name}: its name must start with a number and an underscore (e.g. 010_what_it_does.sql)`);
    const other = byPrefix.get(prefix);
    if (other && !SHARED_PREFIXES_KEPT.has(prefix))
      throw new MigrationMismatch(`migrations ${other} and ${name} share the number ${prefix}: give the newer one the next free number`);
    byPrefix.set(prefix, name);
  }
  return names.map((name) => {
    const sql = readFileSync(`${dir}/${name}`, 'utf8');
    return { name, sql, checksum: migrationChecksum(sql) };
  });
}

/** Returns the names of the migrations this call applied (empty when all were applied before). */
export async function migrate(db: Db, opts: { dir?: string } = {}): Promise<string[]> {
  const migrations = loadMigrations(opts.dir);
  return db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('gateway.migrate.' || current_schema()))`, []);
    // A migration may shape a table for the kind of database it runs on (013 partitions usage records on a server).
    await tx.query(`SELECT set_config('gateway.database_kind', $1, true)`, [db.kind]);
    const done = await appliedMigrations(tx, migrations);
    checkApplied(migrations, done);
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      try {
        await tx.query(m.sql);
      } catch (e) {
        throw new Error(`migration ${m.name} failed: ${(e as Error).message}`, { cause: e });
      }
      await tx.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [m.name, m.checksum]);
      applied.push(m.name);
    }
    return applied;
  });
}

/** The applied migrations and their checksums; rows from before checksums get the file's own. */
async function appliedMigrations(tx: Queryable, migrations: Migration[]): Promise<Map<string, string | null>> {
  await tx.query(
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       name text PRIMARY KEY,
       applied_at timestamptz NOT NULL DEFAULT now()
     );
     ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text`,
  );
  const rows = (await tx.query<{ name: string; checksum: string | null }>('SELECT name, checksum FROM schema_migrations')).rows;
  const done = new Map(rows.map((r) => [r.name, r.checksum]));
  for (const m of migrations) {
    if (!done.has(m.name) || done.get(m.name) !== null) continue;
    await tx.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1 AND checksum IS NULL', [m.name, m.checksum]);
    done.set(m.name, m.checksum);
  }
  return done;
}

/** Stops the start on an applied file that changed, or a new file that sorts before an applied one. */
function checkApplied(migrations: Migration[], done: Map<string, string | null>): void {
  for (const m of migrations) {
    const checksum = done.get(m.name);
    if (checksum !== undefined && checksum !== m.checksum) {
      throw new MigrationMismatch(
        `migration ${m.name} was changed after it was applied to this database: restore the file as it was applied, ` +
          `and put the change in a new migration file`,
      );
    }
  }
  const lastApplied = migrations.filter((m) => done.has(m.name)).at(-1)?.name;
  const early = lastApplied ? migrations.find((m) => !done.has(m.name) && m.name < lastApplied) : undefined;
  if (early) {
    throw new MigrationMismatch(
      `migration ${early.name} is new but sorts before ${lastApplied}, which is applied: give it a number after the last applied one`,
    );
  }
}
