// Where usage records are kept: on PostgreSQL partitioned by Korean day, so retention drops whole days and takes no
// lock an insert waits for; the embedded database keeps a plain table, where a delete is as good
// (docs/decisions/usage-records.md).
import { koreanDate, startOfKoreanDay } from '../core/clock.ts';
import type { Db } from '../db/db.ts';

export interface PruneOutcome {
  /** Records deleted row by row (the plain table). */
  deletedRows: number;
  /** Whole days dropped (the partitioned table), by partition name. */
  droppedPartitions: string[];
}

export interface UsageRecordStorage {
  readonly kind: 'daily-partitions' | 'plain-table';
  /** Makes room for the records of the days around `now`. */
  prepare(now: Date): Promise<void>;
  /** Removes every record of the Korean days before the one `before` falls in. */
  prune(before: Date): Promise<PruneOutcome>;
}

/** Days made ahead: records are written at the clock's now, and a sweeper stopped this long is noticed first. */
const DAYS_AHEAD = 14;
const DAY_MS = 86_400_000;
const PARTITION = /^usage_records_(\d{4})(\d{2})(\d{2})$/;

/** The storage of the database's usage records, as its migration made them. */
export async function usageRecordStorage(db: Db): Promise<UsageRecordStorage> {
  const r = await db.query<{ relkind: string }>(`SELECT relkind FROM pg_class WHERE oid = to_regclass('usage_records')`);
  return r.rows[0]?.relkind === 'p' ? dailyPartitions(db) : plainTable(db);
}

function plainTable(db: Db): UsageRecordStorage {
  return {
    kind: 'plain-table',
    prepare: async () => undefined,
    async prune(before) {
      const r = await db.query(`DELETE FROM usage_records WHERE at < $1::timestamptz`, [dayStartOf(before).toISOString()]);
      return { deletedRows: r.rowCount, droppedPartitions: [] };
    },
  };
}

/** The start of the Korean day `at` falls in. */
const dayStartOf = (at: Date): Date => startOfKoreanDay(koreanDate(at));
const partitionName = (day: string) => `usage_records_${day.replace(/-/g, '')}`;
const dayOfPartition = (name: string): string | null => {
  const m = PARTITION.exec(name);
  return m ? `${m[1]}-${m[2]}-${m[3]}` : null;
};

interface DayTable {
  name: string;
  day: string;
  attached: boolean;
  detachPending: boolean;
}

/** The day tables of the current schema: attached partitions, and any left detached by an interrupted prune. */
async function dayTables(db: Db): Promise<DayTable[]> {
  const r = await db.query<{ relname: string; attached: boolean; pending: boolean }>(
    `SELECT c.relname, i.inhrelid IS NOT NULL AS attached, coalesce(i.inhdetachpending, false) AS pending
       FROM pg_class c LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = 'usage_records'::regclass
      WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'usage_records'::regclass)
        AND c.relkind = 'r' AND c.relname LIKE 'usage\\_records\\_%'
      ORDER BY c.relname`,
  );
  return r.rows.flatMap((row) => {
    const day = dayOfPartition(row.relname);
    return day ? [{ name: row.relname, day, attached: row.attached, detachPending: row.pending }] : [];
  });
}

function dailyPartitions(db: Db): UsageRecordStorage {
  return {
    kind: 'daily-partitions',
    async prepare(now) {
      const have = new Set((await dayTables(db)).filter((t) => t.attached).map((t) => t.day));
      const today = dayStartOf(now).getTime();
      for (let i = -1; i <= DAYS_AHEAD; i++) {
        const day = koreanDate(new Date(today + i * DAY_MS + 12 * 3_600_000));
        if (!have.has(day)) await addDay(db, day);
      }
      // Days past take no more records: vacuumed, their pages are all-visible and the lists read the covering
      // index alone (migration 013). VACUUM waits for no insert and blocks none; once done it skips every page.
      for (const i of [-2, -1]) {
        const day = koreanDate(new Date(today + i * DAY_MS + 12 * 3_600_000));
        if (have.has(day)) await db.query(`VACUUM "${partitionName(day)}"`);
      }
    },
    async prune(before) {
      const beforeDay = koreanDate(dayStartOf(before));
      const dropped: string[] = [];
      for (const t of (await dayTables(db)).filter((x) => x.day < beforeDay)) {
        try {
          // An earlier prune stopped between its two steps: finish it rather than start again.
          if (t.detachPending) await db.query(`ALTER TABLE usage_records DETACH PARTITION "${t.name}" FINALIZE`);
          else if (t.attached) await db.query(`ALTER TABLE usage_records DETACH PARTITION "${t.name}" CONCURRENTLY`);
          await db.query(`DROP TABLE IF EXISTS "${t.name}"`);
          dropped.push(t.name);
        } catch (e) {
          // Another process pruning the same day got there first; anything else is worth the log line.
          const still = (await dayTables(db)).find((x) => x.name === t.name);
          if (still) throw e;
        }
      }
      return { deletedRows: 0, droppedPartitions: dropped };
    },
  };
}

/**
 * Adds one Korean day: an empty table, then ATTACH (which, unlike CREATE TABLE … PARTITION OF, takes only SHARE
 * UPDATE EXCLUSIVE on the parent). Processes starting at once serialize on an advisory lock and look again.
 */
async function addDay(db: Db, day: string): Promise<void> {
  const name = partitionName(day);
  const from = startOfKoreanDay(day);
  const to = new Date(from.getTime() + DAY_MS);
  await db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('gateway.usage_records.partitions.' || current_schema()))`);
    const exists = await tx.query(
      `SELECT 1 FROM pg_inherits WHERE inhparent = 'usage_records'::regclass AND inhrelid = to_regclass(quote_ident($1))`,
      [name],
    );
    if (exists.rowCount > 0) return;
    await tx.query(`CREATE TABLE IF NOT EXISTS "${name}" (LIKE usage_records INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
    await tx.query(
      `ALTER TABLE usage_records ATTACH PARTITION "${name}" FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`,
    );
  });
}
