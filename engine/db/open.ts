// Opens the database the operator chose and brings its schema up to date.
//   url set   → PostgreSQL server through `pg` (DATABASE_URL)
//   otherwise → PGlite kept at dataDir (GATEWAY_DATA_DIR, default ./data); 'memory://' → in memory.
// Migrations run before it returns (safe when several processes start at once).
import { mkdirSync } from 'node:fs';
import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import { openPg } from './pg.ts';
import { openPglite } from './pglite.ts';

export interface OpenDatabaseOptions {
  url?: string;
  /** PGlite data directory; default ./data. 'memory://' keeps it in memory. */
  dataDir?: string;
  /** Skip migrations (default false). */
  skipMigrations?: boolean;
  /** pg pool size. */
  poolSize?: number;
  onError?: (err: Error) => void;
}

export async function openDatabase(opts: OpenDatabaseOptions = {}): Promise<Db> {
  let db: Db;
  if (opts.url) {
    db = await openPg({ url: opts.url, max: opts.poolSize, onError: opts.onError });
  } else {
    const dataDir = opts.dataDir ?? './data';
    if (dataDir !== 'memory://') mkdirSync(dataDir, { recursive: true });
    db = await openPglite({ dataDir });
  }
  if (!opts.skipMigrations) {
    try {
      await migrate(db);
    } catch (e) {
      await db.close().catch(() => {});
      throw e;
    }
  }
  return db;
}
