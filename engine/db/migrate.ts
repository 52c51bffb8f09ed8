// Applies engine/db/migrations/*.sql in filename order, each once, recorded in `schema_migrations`.
// Everything runs in one transaction that first takes a transaction-scoped advisory lock (keyed by the
// current schema), so two processes starting at once on one PostgreSQL serialize: the second waits, then
// sees the first one's rows and applies nothing. A failing migration rolls back the whole run.
import { readdirSync, readFileSync } from 'node:fs';
import { projectPath } from '../core/project-path.ts';
import type { Db } from './db.ts';

export const MIGRATIONS_DIR = projectPath(import.meta.url, 'engine/db/migrations');

export interface Migration {
  name: string;
  sql: string;
}

export function loadMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((name) => ({ name, sql: readFileSync(`${dir}/${name}`, 'utf8') }));
}

/** Returns the names of the migrations this call applied (empty when all were applied before). */
export async function migrate(db: Db, opts: { dir?: string } = {}): Promise<string[]> {
  const migrations = loadMigrations(opts.dir);
  return db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('gateway.migrate.' || current_schema()))`, []);
    await tx.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         name text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const done = new Set((await tx.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      try {
        await tx.query(m.sql);
      } catch (e) {
        throw new Error(`migration ${m.name} failed: ${(e as Error).message}`, { cause: e });
      }
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [m.name]);
      applied.push(m.name);
    }
    return applied;
  });
}
