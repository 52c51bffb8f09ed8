// Records at scale: on PostgreSQL the records live in one partition per Korean day and retention drops whole
// days (the others stay, rows and all); existing records move into the partitioned table in the migration, with
// the rollup backfilled; and on both databases the daily rollup, written by the settle's own statement, equals
// the records it sums after a burst of charged calls, and is what the dashboard's chart, totals and summary CSV
// show.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock, koreanDate } from '../../engine/core/clock.ts';
import { writeChargeRows } from '../../engine/db/charge-rows.ts';
import type { Db } from '../../engine/db/db.ts';
import { MIGRATIONS_DIR, migrate } from '../../engine/db/migrate.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { dailyRollupWriter } from '../../engine/usage/daily-rollup.ts';
import { usageRecordStorage } from '../../engine/usage/record-storage.ts';
import { type UsageRecordDraft, usageRecordWriter } from '../../engine/usage/records.ts';
import { pruneUsageRecords } from '../../engine/usage/retention.ts';
import { signIn } from '../dashboard/owner-client.ts';
import { post, sleep } from '../e2e/e2e.ts';
import { databaseKinds, openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';

const onPostgres = postgresAvailability.ok ? describe : describe.skip;
const DECEMBER = new Date('2026-12-10T00:00:00Z');

const draft = (walletId: string, at: string, i: number): UsageRecordDraft => ({
  requestId: `r-${at}-${i}`,
  walletId,
  keyId: i % 2 ? 'k1' : null,
  at: new Date(at),
  door: 'chat',
  model: i % 3 ? 'b-5' : 'a-5',
  vendor: 'b',
  route: 'b0',
  fallbackDepth: 0,
  durationMs: 3,
  traceId: null,
  prices: null,
  usage: {
    input_tokens: 100 + i,
    output_tokens: 10 * i,
    cache_read_tokens: i,
    cache_write_tokens: 0,
    web_search_calls: 0,
    file_search_calls: 0,
  },
});

async function writeRecords(db: Db, drafts: UsageRecordDraft[]) {
  const rows = drafts.map((item, i) => ({ item, chargedNano: BigInt(1000 + i) }));
  await db.transaction(async (tx) => {
    await writeChargeRows(tx, usageRecordWriter, rows);
    await writeChargeRows(tx, dailyRollupWriter, rows);
  });
}

const count = async (db: Db, sql: string, params: unknown[] = []) => Number((await db.query<{ n: string }>(sql, params)).rows[0]!.n);

/** The records summed per Korean day, wallet, key and model, and the rollup, in the same shape. */
async function rollupAndRecords(db: Db, walletId: string) {
  const records = await db.query(
    `SELECT to_char((at AT TIME ZONE 'Asia/Seoul')::date, 'YYYY-MM-DD') AS day, coalesce(key_id, '') AS key_id, model, count(*)::text AS calls,
            sum(charged_nano)::text AS nano, sum(input_tokens)::text AS i, sum(cache_read_tokens)::text AS cr, sum(output_tokens)::text AS o
       FROM usage_records WHERE wallet_id = $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [walletId],
  );
  const rollup = await db.query(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, key_id, model, calls::text AS calls, charged_nano::text AS nano, input_tokens::text AS i,
            cache_read_tokens::text AS cr, output_tokens::text AS o
       FROM usage_daily WHERE wallet_id = $1 ORDER BY 1, 2, 3`,
    [walletId],
  );
  return { records: records.rows, rollup: rollup.rows };
}

onPostgres('usage records on PostgreSQL: one partition per Korean day', () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await openTestPostgres();
  });
  afterAll(() => pg?.cleanup());

  it('retention drops whole days and leaves the others, rows and all', async () => {
    const storage = await usageRecordStorage(pg.db);
    expect(storage.kind).toBe('daily-partitions');
    // No credits: a lot is written by today's code, with columns later migrations add.
    const wallet = await createLedger(pg.db, { clock: fixedClock(TEST_NOW), owner: 't' }).createWallet({ credits: 0 });
    // Three Korean days: 2026-08-01, 08-02 and 08-03 (Korean midnight is 15:00 UTC the day before).
    for (const day of ['2026-08-01', '2026-08-02', '2026-08-03']) await storage.prepare(new Date(`${day}T03:00:00Z`));
    await writeRecords(pg.db, [
      ...[0, 1, 2].map((i) => draft(wallet.id, '2026-07-31T15:00:00Z', i)), // 08-01 00:00 KST
      ...[0, 1].map((i) => draft(wallet.id, '2026-08-01T14:59:59Z', i + 10)), // 08-01 23:59:59 KST
      ...[0, 1].map((i) => draft(wallet.id, '2026-08-01T15:00:00Z', i + 20)), // 08-02 00:00 KST
      draft(wallet.id, '2026-08-03T01:00:00Z', 30),
    ]);
    expect(await count(pg.db, `SELECT count(*) AS n FROM usage_records_20260801`)).toBe(5);

    // 08-02 05:00 KST: before 08-02, run in December (the rollup keeps the month of the run and the one before).
    const outcome = await pruneUsageRecords(pg.db, new Date('2026-08-01T20:00:00Z'), storage, DECEMBER);
    // 07-31 is the empty day made behind the first prepare.
    expect(outcome).toEqual({ deletedRows: 0, droppedPartitions: ['usage_records_20260731', 'usage_records_20260801'] });
    expect(await count(pg.db, `SELECT count(*) AS n FROM pg_class WHERE relname = 'usage_records_20260801'`)).toBe(0);
    expect(
      await count(pg.db, `SELECT count(*) AS n FROM pg_class WHERE relname IN ('usage_records_20260802', 'usage_records_20260803')`),
    ).toBe(2);
    expect(await count(pg.db, `SELECT count(*) AS n FROM usage_records WHERE wallet_id = $1`, [wallet.id])).toBe(3);
    const { records, rollup } = await rollupAndRecords(pg.db, wallet.id);
    expect(rollup).toEqual(records); // the rollup's pruned days went with them
    expect(rollup.every((r) => String(r.day) >= '2026-08-02')).toBe(true);

    // Pruning again finds nothing more; the day tables made ahead stay.
    expect((await pruneUsageRecords(pg.db, new Date('2026-08-01T20:00:00Z'), storage, DECEMBER)).droppedPartitions).toEqual([]);
  });

  it('prepare makes the days ahead once, however many processes ask at once', async () => {
    const storage = await usageRecordStorage(pg.db);
    const at = new Date('2027-03-10T00:00:00Z');
    await Promise.all([storage.prepare(at), storage.prepare(at), storage.prepare(at)]);
    const days = await pg.db.query<{ relname: string }>(
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'usage_records'::regclass AND c.relname >= 'usage_records_20270309' AND c.relname <= 'usage_records_20270330' ORDER BY 1`,
    );
    expect(days.rows.map((r) => r.relname)).toEqual(
      Array.from(
        { length: 16 },
        (_, i) => `usage_records_${koreanDate(new Date(Date.parse('2027-03-09T03:00:00Z') + i * 86_400_000)).replace(/-/g, '')}`,
      ),
    );
  });
});

onPostgres('migration 013 on PostgreSQL: existing records move into the partitioned table, the rollup backfilled', () => {
  let pg: TestPostgres;
  let before: string;
  beforeAll(async () => {
    pg = await openTestPostgres({ migrate: false });
    before = mkdtempSync(join(tmpdir(), 'gw-migrations-'));
    // Every migration before 013, so the records below are written to the table as it was.
    cpSync(MIGRATIONS_DIR, before, {
      recursive: true,
      filter: (src) => !/\/(\d+)_[^/]*\.sql$/.test(src) || Number(/\/(\d+)_[^/]*\.sql$/.exec(src)![1]) < 13,
    });
  });
  afterAll(async () => {
    await pg?.cleanup();
    rmSync(before, { recursive: true, force: true });
  });

  it('moves every row, keeps the lookup order, and the rollup sums them', async () => {
    await migrate(pg.db, { dir: before });
    // No credits: a lot is written by today's code, with columns later migrations add.
    const wallet = await createLedger(pg.db, { clock: fixedClock(TEST_NOW), owner: 't' }).createWallet({ credits: 0 });
    await pg.db.query(
      `INSERT INTO usage_records (request_id, wallet_id, key_id, at, door, model, vendor, input_tokens, output_tokens, charged_nano, duration_ms)
       SELECT 'old-' || (g % 7), $1, CASE WHEN g % 2 = 0 THEN 'k1' END, timestamptz '2026-06-01 00:00+09' + g * interval '5 hours',
              'chat', 'b-5', 'b', g, 2 * g, 1000 + g, 5
         FROM generate_series(1, 50) AS g`,
      [wallet.id],
    );
    const newestOld3 = (await pg.db.query<{ seq: string }>(`SELECT max(seq)::text AS seq FROM usage_records WHERE request_id = 'old-3'`))
      .rows[0]!.seq;

    // 013 comes first; later migrations (other features) may follow it.
    expect((await migrate(pg.db))[0]).toBe('013_usage_records_at_scale.sql');
    expect(await count(pg.db, `SELECT count(*) AS n FROM pg_partitioned_table WHERE partrelid = 'usage_records'::regclass`)).toBe(1);
    expect(await count(pg.db, `SELECT count(*) AS n FROM usage_records WHERE wallet_id = $1`, [wallet.id])).toBe(50);
    expect(await count(pg.db, `SELECT count(*) AS n FROM ONLY usage_records`)).toBe(0);
    const found = await pg.db.query<{ seq: string }>(
      `SELECT seq::text FROM usage_records WHERE wallet_id = $1 AND request_id = 'old-3' ORDER BY seq DESC LIMIT 1`,
      [wallet.id],
    );
    expect(found.rows[0]!.seq).toBe(newestOld3);
    const { records, rollup } = await rollupAndRecords(pg.db, wallet.id);
    expect(rollup).toEqual(records);
    // New records continue the sequence after the moved ones.
    const storage = await usageRecordStorage(pg.db);
    await storage.prepare(new Date(TEST_NOW));
    await writeRecords(pg.db, [draft(wallet.id, TEST_NOW, 1)]);
    const next = await pg.db.query<{ seq: string }>(`SELECT seq::text FROM usage_records WHERE request_id = $1`, [`r-${TEST_NOW}-1`]);
    expect(BigInt(next.rows[0]!.seq)).toBeGreaterThan(50n);
  });
});

for (const kind of databaseKinds) {
  const suite = kind === 'postgres' && !postgresAvailability.ok ? describe.skip : describe;
  suite(`the daily rollup through the gateway [${kind}]`, () => {
    let pg: TestPostgres | undefined;
    let t: TestGateway;
    beforeAll(async () => {
      if (kind === 'postgres') pg = await openTestPostgres({ migrate: false });
      t = await startTestGateway({ env: pg ? { DATABASE_URL: pg.url } : {} });
    });
    afterAll(async () => {
      await t?.close();
      await pg?.cleanup();
    });

    it('after a burst of charged calls over two keys and two models, the rollup equals the records it sums', async () => {
      const { key: second } = await t.gw.keys.createApiKey(t.walletId, { name: 'second' });
      const start = await t.balance();
      const calls = Array.from({ length: 40 }, (_, i) =>
        post(
          t,
          '/v1/chat/completions',
          {
            model: i % 2 ? 'b-5' : 'b-5-mini',
            messages: [{ role: 'user', content: `n${i} [[sim:usage input=${100 + i} cache_read=${i} output=${20 + i}]]` }],
            max_completion_tokens: 200,
          },
          i % 3 ? {} : { authorization: `Bearer ${second}` },
        ).then(async (r) => {
          expect(r.status).toBe(200);
          await r.text();
        }),
      );
      await Promise.all(calls);
      for (let i = 0; i < 200 && (await t.held()) !== 0n; i++) await sleep(20);
      const { records, rollup } = await rollupAndRecords(t.gw.db, t.walletId);
      expect(rollup).toEqual(records);
      expect(rollup.reduce((a, r) => a + Number(r.calls), 0)).toBe(40);
      expect(rollup.reduce((a, r) => a + BigInt(r.nano as string), 0n)).toBe(start - (await t.balance()));
    });

    it('the dashboard chart, its totals and the summary CSV read the rollup; the per-call CSV reads the records', async () => {
      const owner = await signIn(t, t.walletId);
      const charged = (
        await t.gw.db.query<{ s: string }>(`SELECT sum(charged_nano)::text AS s FROM usage_records WHERE wallet_id = $1`, [t.walletId])
      ).rows[0]!.s;
      const totalsOf = (page: string) => /data-testid="usage-totals" data-nano="(\d+)" data-calls="(\d+)"/.exec(page)!.slice(1);
      expect(totalsOf(await (await owner.get('/dashboard/usage')).text())).toEqual([charged, '40']);

      // A mark only the rollup carries shows where each figure comes from.
      await t.gw.db.query(
        `UPDATE usage_daily SET charged_nano = charged_nano + 1000000, calls = calls + 1 WHERE wallet_id = $1 AND model = 'b-5'
        AND key_id = (SELECT min(key_id) FROM usage_daily WHERE wallet_id = $1 AND model = 'b-5')`,
        [t.walletId],
      );
      const marked = (BigInt(charged) + 1_000_000n).toString();
      const page = await (await owner.get('/dashboard/usage?by=model')).text();
      expect(totalsOf(page)).toEqual([marked, '41']);
      const bars = [...page.matchAll(/<rect [^>]*data-nano="(\d+)"/g)].reduce((a, m) => a + BigInt(m[1]!), 0n);
      expect(bars.toString()).toBe(marked);

      const month = koreanDate(new Date(TEST_NOW)).slice(0, 7);
      const summary = await (await owner.get(`/dashboard/usage-summary.csv?month=${month}`)).text();
      const total = summary.trim().split('\r\n').pop()!.split(',');
      expect([total[0], total[4], total[9]]).toEqual(['total', '41', marked]);
      // Dollars and whole won (the shipped display currency, 1,400 a dollar) after the credits.
      expect(summary.split('\r\n')[0]).toMatch(/,charged_nano,charged_credits,charged_usd,charged_krw$/);
      const nano = BigInt(marked);
      expect(total.slice(11)).toEqual([
        `${nano / 1_000_000_000n}.${(nano % 1_000_000_000n).toString().padStart(9, '0')}`,
        ((nano * 1400n + 999_999_999n) / 1_000_000_000n).toString(), // rounded up, as a charge
      ]);
      // The won of the lines add up to the total's, as an accountant checks the column.
      const lines = summary.trim().split('\r\n').slice(1, -1);
      expect(lines.length).toBeGreaterThan(1);
      expect(lines.reduce((a, l) => a + BigInt(l.split(',')[12]!), 0n).toString()).toBe(total[12]);

      const perCall = (await (await owner.get(`/dashboard/usage.csv?month=${month}`)).text()).trim().split('\r\n');
      expect(perCall).toHaveLength(41); // the header and the forty records
      const header = perCall[0]!.split(',');
      const sum = perCall.slice(1).reduce((a, line) => a + BigInt(line.split(',')[header.indexOf('charged_nano')]!), 0n);
      expect(sum.toString()).toBe(charged);
      expect((await owner.get('/dashboard/usage.csv?month=2026-13')).status).toBe(400);
    });
  });
}
