// Opens the database the operator chose (DATABASE_URL, else PGlite at GATEWAY_DATA_DIR) and migrates it before
// returning. The data folder is locked before anything in it is read, so a second opener is refused, never let in.
import { privateDir } from '../core/private-dir.ts';
import { type DataFolderLock, lockDataFolder } from './data-folder-lock.ts';
import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import { openPg } from './pg.ts';
import { openPglite } from './pglite.ts';

interface OpenDatabaseOptions {
  url?: string | undefined;
  /** PGlite data directory; default ./data. 'memory://' keeps it in memory. */
  dataDir?: string | undefined;
  /** Skip migrations (default false). */
  skipMigrations?: boolean;
  /** pg pool size. */
  poolSize?: number;
  onError?: (err: Error) => void;
  /** Who opens an embedded data folder (`gateway`, an operator command): named to a second opener it refuses. */
  role?: string;
}

export async function openDatabase(opts: OpenDatabaseOptions = {}): Promise<Db> {
  let db: Db;
  if (opts.url) {
    db = await openPg({ url: opts.url, max: opts.poolSize, onError: opts.onError });
  } else {
    db = await openEmbedded(opts.dataDir ?? './data', opts.role ?? 'gateway');
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

async function openEmbedded(dataDir: string, role: string): Promise<Db> {
  if (dataDir === 'memory://') return openPglite({ dataDir });
  privateDir(dataDir);
  const lock: DataFolderLock = await lockDataFolder(dataDir, role);
  let db: Db;
  try {
    db = await openPglite({ dataDir });
  } catch (e) {
    await lock.release();
    throw e;
  }
  const close = db.close.bind(db);
  return Object.assign(db, {
    async close() {
      try {
        await close();
      } finally {
        await lock.release();
      }
    },
  });
}
