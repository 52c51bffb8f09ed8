// A batch that may be writing a charge again looks first for the usage record carrying the charge's id, in an
// EXISTS, on the generic plan its statement got when the process first ran it, often on an empty table. PGlite never
// analyzes its tables, so that plan stays for the life of the process: a look bounded below only was planned as a
// scan of every record, at every batch. On PostgreSQL it searched every day made two weeks ahead (docs/benchmarks.md,
// "The look for a charge written before").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, Queryable } from '../../engine/db/db.ts';
import { usageRecordStorage } from '../../engine/usage/record-storage.ts';
import { usageRecordWriter } from '../../engine/usage/records.ts';
import { type DatabaseKind, databaseKinds, openTestDatabase, postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';

const RECORDS = 20_000;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Subplans Removed'?: number;
  Plans?: PlanNode[];
}

const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

async function planOf(tx: Queryable, sql: string): Promise<PlanNode> {
  const r = await tx.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`);
  const raw = r.rows[0]!['QUERY PLAN'];
  return ((typeof raw === 'string' ? JSON.parse(raw) : raw) as { Plan: PlanNode }[])[0]!.Plan;
}

/** The look's plan once the table holds RECORDS records, its statement prepared (and run once) while it held none. */
async function lookPlannedOnEmpty(db: Db): Promise<PlanNode> {
  const look = usageRecordWriter.transfersRecorded!.look('$1', '$2', '$3');
  const run = `EXECUTE recorded_look(ARRAY['not-written'], now() - interval '1 day', now() + interval '1 day')`;
  return db.transaction(async (tx) => {
    await tx.query('SET LOCAL plan_cache_mode = force_generic_plan'); // as a batch runs (TransactionOptions.genericPlans)
    await tx.query(`PREPARE recorded_look (text[], timestamptz, timestamptz) AS SELECT EXISTS (${look})`);
    await tx.query(run);
    await tx.query(`INSERT INTO wallets (id, owner_id) VALUES ('w-look', 'o')`);
    await tx.query(
      `INSERT INTO usage_records (request_id, wallet_id, at, door, model, vendor, fallback_depth, input_tokens,
         cache_read_tokens, cache_write_tokens, output_tokens, server_tool_calls, charged_nano, duration_ms, transfer_id)
       SELECT 'r' || g, 'w-look', now() - (g % 600) * interval '1 second', 'chat', 'm', 'b', 0, 1, 0, 0, 1, 0, 100, 1, 't' || g
         FROM generate_series(1, ${RECORDS}) g`,
    );
    const plan = await planOf(tx, run);
    await tx.query('DEALLOCATE recorded_look');
    return plan;
  });
}

describe.each(databaseKinds)('the look for a charge written before, on %s', (kind: DatabaseKind) => {
  const skip = kind === 'postgres' && !postgresAvailability.ok && !REQUIRE_POSTGRES;
  let db: Db;
  let close: () => Promise<void>;
  beforeAll(async () => {
    if (skip) return;
    ({ db, close } = await openTestDatabase(kind));
    await (await usageRecordStorage(db)).prepare(new Date());
  });
  afterAll(async () => {
    if (!skip) await close();
  });

  it.skipIf(skip)('searches by charge id in the days of its window, on a plan made on an empty table', async () => {
    const all = nodes(await lookPlannedOnEmpty(db));
    const scans = all.filter((n) => n['Relation Name']?.startsWith('usage_records'));
    expect(scans.length).toBeGreaterThan(0);
    if (kind === 'pglite') {
      expect(scans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    } else {
      // Two days' window touches three days' tables at most, of the sixteen made (yesterday to two weeks ahead).
      // (PostgreSQL analyzes a day's table as it fills, and plans the look again then.)
      expect(scans.length).toBeLessThanOrEqual(3);
      expect(all.find((n) => n['Node Type'] === 'Append')?.['Subplans Removed']).toBeGreaterThanOrEqual(12);
    }
  });
});
