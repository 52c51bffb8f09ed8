// Usage records at scale, on PostgreSQL (not part of `npm run bench`): fills a fresh schema with `--records`
// usage records (10,000,000) across `--wallets` wallets (1,000) over the last 90 Korean days, written with
// INSERT … SELECT generate_series into the day partitions, and the daily rollup summed from them; then a gateway
// on that schema answers, over HTTP, for wallets picked at random:
//   - the dashboard's usage page (chart and totals from the rollup, the 200 newest calls from the records),
//   - the per-call CSV of last month, and the month's summary CSV,
//   - GET /v1/generations/{id} of a random record of the wallet,
// each timed (p50, p99, max). Last, retention drops the two oldest days while four writers insert records and
// their rollup the way settles do: the insert latency before and during the drop, and whether any lock request
// was left waiting meanwhile.
//
//   node --import tsx bench/usage-records-scale.ts [--records 10000000] [--wallets 1000] [--samples 300] [--explain]
//                                                  [--keep] [--reuse <schema>]
//
// --keep leaves the filled schema (its name is printed) so a later run can be timed on a quieter machine without
// filling again: --reuse <schema> skips the fill (same --records and --wallets, within the month of the fill).
// The retention step drops two more days on every run.
//
// --explain prints the plans (EXPLAIN ANALYZE, BUFFERS; first line and timings) of the records' reads for one
// wallet before the timing, and the month CSV's read and rendering now against as it was before, in turns.
// PostgreSQL is BENCH_DATABASE_URL or TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test); the
// schema is dropped after. Figures go to docs/benchmarks.md by hand.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { koreanDate, startOfKoreanDay } from '../engine/core/clock.ts';
import { exactCredits } from '../engine/dashboard/format.ts';
import { usageCsv } from '../engine/dashboard/usage-csv.ts';
import { writeChargeRows } from '../engine/db/charge-rows.ts';
import type { Db } from '../engine/db/db.ts';
import { openPg } from '../engine/db/pg.ts';
import { openScratchSchema, urlWithSchema } from '../engine/db/scratch-schema.ts';
import { createGateway } from '../engine/gateway.ts';
import { csvCell } from '../engine/http/csv-cell.ts';
import { listUsageCsvRows } from '../engine/usage/csv-rows.ts';
import { dailyRollupWriter } from '../engine/usage/daily-rollup.ts';
import { usageRecordStorage } from '../engine/usage/record-storage.ts';
import { listUsageRecords, type UsageRecordDraft, usageRecordWriter } from '../engine/usage/records.ts';
import { pruneUsageRecords } from '../engine/usage/retention.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string' },
    wallets: { type: 'string' },
    samples: { type: 'string' },
    explain: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    reuse: { type: 'string' },
  },
});
const RECORDS = Number(values.records ?? 10_000_000);
const WALLETS = Number(values.wallets ?? 1_000);
const SAMPLES = Number(values.samples ?? 300);
const DAYS = 90;
const DAY_MS = 86_400_000;
const CHUNK = 1_000_000;
const DATABASE_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const ADMIN = 'bench-admin-token';

const log = (...a: unknown[]) => console.log(new Date().toISOString().slice(11, 19), ...a);
const walletId = (n: number) => `bw${String(n).padStart(4, '0')}`;
const pick = (n: number) => Math.floor(Math.random() * n);

function percentiles(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
  return { n: s.length, p50: +at(50).toFixed(2), p95: +at(95).toFixed(2), p99: +at(99).toFixed(2), max: +s[s.length - 1]!.toFixed(2) };
}

/** The plans of the records' reads for one wallet: the month of the CSV, the newest 200, one id. */
async function explainReads(month: string): Promise<void> {
  const since = startOfKoreanDay(`${month}-01`).toISOString();
  const until = new Date(startOfKoreanDay(`${month}-01`).getTime() + 31 * DAY_MS).toISOString();
  const reads: [string, string, unknown[]][] = [
    [
      'month',
      `SELECT ${LISTED} FROM usage_records WHERE wallet_id = $1 AND at >= $2 AND at < $3 ORDER BY at DESC, seq DESC LIMIT 10000`,
      [walletId(7), since, until],
    ],
    ['newest 200', `SELECT ${LISTED} FROM usage_records WHERE wallet_id = $1 ORDER BY at DESC, seq DESC LIMIT 200`, [walletId(8)]],
    [
      'one id',
      `SELECT * FROM usage_records WHERE wallet_id = $1 AND request_id = $2 ORDER BY seq DESC LIMIT 1`,
      [walletId(9), `req-${9 + WALLETS * 5}`],
    ],
  ];
  for (const [name, sql, params] of reads) {
    const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
    const lines = plan.rows.map((r) => r['QUERY PLAN']);
    // The first line and the timings; the per-partition lines (one per day) say the same thing 30 to 108 times.
    const kept = lines.filter((l, i) => i === 0 || /Heap Fetches: [1-9]|Planning Time|Execution Time/.test(l));
    console.log(`--- ${name}\n${kept.join('\n')}`);
  }
  // The CSV's read and rendering, the way it is done now (csv-rows.ts: text cells, numbers joined by the
  // database) against the way it was (every record as its view, each cell rendered here), in turns on the same
  // wallets so the machine's load falls on both alike.
  const lean: number[] = [];
  const asViews: number[] = [];
  for (let i = 0; i < 20; i++) {
    const wallet = walletId(7 + (i % 3));
    const span = { limit: 10_000, since: new Date(since), until: new Date(until) };
    let t0 = performance.now();
    usageCsv(await listUsageCsvRows(db, wallet, span), (id) => id ?? '');
    lean.push(performance.now() - t0);
    t0 = performance.now();
    csvFromViews(await listUsageRecords(db, wallet, span));
    asViews.push(performance.now() - t0);
  }
  console.log('--- month CSV read and rendered, ms: now', percentiles(lean), 'as record views (before)', percentiles(asViews));
}

/** The per-call CSV as it was rendered before csv-rows.ts: from each record's view, every cell here. */
function csvFromViews(rows: Awaited<ReturnType<typeof listUsageRecords>>): string {
  const lines = rows.map((r) =>
    [
      r.id,
      r.created_at,
      r.key_id,
      r.key_id,
      r.door,
      r.model,
      r.vendor,
      r.route,
      r.fallback_depth,
      r.tokens.input,
      r.tokens.cache_read,
      r.tokens.cache_write,
      r.tokens.output,
      r.tokens.reasoning,
      r.server_tool_calls,
      r.characters,
      r.images,
      r.video_seconds,
      r.charged_nano,
      exactCredits('en', BigInt(r.charged_nano)).replace(/,/g, ''),
      r.duration_ms,
      r.trace_id,
    ]
      .map(csvCell)
      .join(','),
  );
  return `${lines.join('\r\n')}\r\n`;
}
/** Wallets, and RECORDS usage records spread over the DAYS before `now`. */
async function fill(now: Date): Promise<void> {
  await db.query(
    `INSERT INTO wallets (id, owner_id) SELECT 'bw' || lpad(g::text, 4, '0'), 'bench-owner-' || g FROM generate_series(0, $1::int - 1) g`,
    [WALLETS],
  );
  const spanMs = DAYS * DAY_MS;
  for (let from = 1; from <= RECORDS; from += CHUNK) {
    const to = Math.min(RECORDS, from + CHUNK - 1);
    // Record g belongs to wallet g % WALLETS, one of its three keys, one of five models, at an instant spread
    // over the 90 days (a multiplicative hash of g, so each day and wallet get their share, in no order).
    await db.query(
      `INSERT INTO usage_records (request_id, wallet_id, key_id, at, door, model, vendor, route, fallback_depth, input_tokens,
                                  cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, charged_nano, duration_ms, trace_id, prices)
       SELECT 'req-' || g, 'bw' || lpad((g % $3::int)::text, 4, '0'), 'bk' || (g % $3::int) || '-' || ((g / $3::int) % 3),
              $4::timestamptz - ((g::bigint * 2654435761) % $5::bigint) * interval '1 millisecond',
              'chat', (ARRAY['b-5', 'b-5-mini', 'a-5', 'c-2.5-flash', 'd-3'])[1 + g % 5], 'b', 'b0', 0, 100 + g % 5000, g % 100, 0,
              10 + g % 800, NULL, 1000 + g % 100000, 50 + g % 3000, CASE WHEN g % 2 = 0 THEN md5(g::text) END,
              '{"basis":"base","input":1.25,"output":10,"cache_read":0.125,"cache_write":1.25}'::jsonb
         FROM generate_series($1::bigint, $2::bigint) g`,
      [from, to, WALLETS, now.toISOString(), spanMs],
    );
    log(`records ${to.toLocaleString('en-US')} / ${RECORDS.toLocaleString('en-US')}`);
  }
}

/** The daily rollup summed from the records, and what the upkeep does to each closed day. */
async function rollUp(): Promise<void> {
  await db.query(
    `INSERT INTO usage_daily
     SELECT (at AT TIME ZONE 'Asia/Seoul')::date, wallet_id, coalesce(key_id, ''), model, count(*), sum(charged_nano)::bigint,
            sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens)
       FROM usage_records GROUP BY 1, 2, 3, 4`,
  );
  // What the upkeep does to each closed day (record-storage.ts), done at once for the 90 days filled here.
  await db.query(`VACUUM (ANALYZE) usage_records`);
  await db.query(`ANALYZE usage_daily`);
}

/** A schema filled by an earlier run with --keep. */
async function reusedSchema(schema: string): Promise<{ url: string; schema: string; db: Db; cleanup(): Promise<void> }> {
  const url = urlWithSchema(DATABASE_URL, schema);
  const db = await openPg({ url, max: 30 });
  return { url, schema, db, cleanup: () => db.close() };
}

/** The columns the lists read (engine/usage/records.ts LIST_COLUMNS). */
const LISTED = `request_id, key_id, at, door, model, vendor, route, fallback_depth, input_tokens, cache_read_tokens, cache_write_tokens,
  output_tokens, reasoning_tokens, server_tool_calls, characters, images, video_seconds, charged_nano, duration_ms, trace_id`;

const scratch = values.reuse ? await reusedSchema(values.reuse) : await openScratchSchema(DATABASE_URL);
const { db } = scratch;
if (values.keep || values.reuse) log(`schema ${scratch.schema} (kept after the run)`);
const dataDir = mkdtempSync(join(tmpdir(), 'gw-usage-scale-'));
let closeGateway: (() => Promise<void>) | null = null;
try {
  const now = new Date();
  const storage = await usageRecordStorage(db);
  if (storage.kind !== 'daily-partitions') throw new Error('expected the partitioned table on PostgreSQL');
  for (let t = now.getTime() - (DAYS + 2) * DAY_MS; t < now.getTime(); t += 14 * DAY_MS) await storage.prepare(new Date(t));
  await storage.prepare(now);

  // ---------- fill ----------
  let started = performance.now();
  if (!values.reuse) await fill(now);
  const fillS = (performance.now() - started) / 1000;
  started = performance.now();
  if (!values.reuse) await rollUp();
  const rollupS = (performance.now() - started) / 1000;
  const sizes = (
    await db.query<{ heap: string; indexes: string; rollup_rows: string; partitions: string }>(
      `SELECT (SELECT sum(pg_table_size(inhrelid))::text FROM pg_inherits WHERE inhparent = 'usage_records'::regclass) AS heap,
              (SELECT sum(pg_indexes_size(inhrelid))::text FROM pg_inherits WHERE inhparent = 'usage_records'::regclass) AS indexes,
              (SELECT count(*)::text FROM usage_daily) AS rollup_rows,
              (SELECT count(*)::text FROM pg_inherits WHERE inhparent = 'usage_records'::regclass) AS partitions`,
    )
  ).rows[0];
  log(`filled in ${fillS.toFixed(0)} s, rollup and VACUUM in ${rollupS.toFixed(0)} s`, sizes);

  const lastMonth = koreanDate(new Date(startOfKoreanDay(`${koreanDate(now).slice(0, 7)}-01`).getTime() - DAY_MS)).slice(0, 7);
  if (values.explain) await explainReads(lastMonth);

  // ---------- a gateway on the schema ----------
  const gw = await createGateway({
    env: { DATABASE_URL: scratch.url, GATEWAY_SIMULATE: '1', GATEWAY_ADMIN_TOKEN: ADMIN, GATEWAY_DATA_DIR: dataDir },
    logger: false,
    sweeper: false,
  });
  closeGateway = () => gw.close();
  const base = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const sampled = Array.from({ length: 20 }, () => pick(WALLETS));
  const callers = await Promise.all(
    sampled.map(async (n) => {
      const { key } = await gw.keys.createApiKey(walletId(n), { name: `bench ${n}` });
      const link = await fetch(`${base}/admin/v1/wallets/${walletId(n)}/sign-in-link`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      const token = new URL((await link.json()).url).searchParams.get('token') ?? '';
      const signIn = await fetch(`${base}/dashboard/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
        redirect: 'manual',
      });
      const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
      return { n, key, cookie };
    }),
  );
  async function timed(name: string, request: () => Promise<Response>): Promise<ReturnType<typeof percentiles> & { bytes: number }> {
    const ms: number[] = [];
    let bytes = 0;
    for (let i = 0; i < SAMPLES + 20; i++) {
      const t0 = performance.now();
      const res = await request();
      const body = await res.arrayBuffer();
      const took = performance.now() - t0;
      if (res.status !== 200) throw new Error(`${name}: ${res.status} ${Buffer.from(body).toString().slice(0, 200)}`);
      if (i >= 20) ms.push(took); // the first twenty warm the caches and the pools
      bytes = body.byteLength;
    }
    const p = { ...percentiles(ms), bytes };
    log(name, p);
    return p;
  }
  const anyCaller = () => callers[pick(callers.length)]!;
  const results: Record<string, unknown> = {};
  results.usagePage = await timed('dashboard usage page', () =>
    fetch(`${base}/dashboard/usage`, { headers: { cookie: anyCaller().cookie } }),
  );
  results.usagePageByModel = await timed('dashboard usage page, chart per model', () =>
    fetch(`${base}/dashboard/usage?by=model`, { headers: { cookie: anyCaller().cookie } }),
  );
  results.monthCsv = await timed(`per-call CSV of ${lastMonth}`, () =>
    fetch(`${base}/dashboard/usage.csv?month=${lastMonth}`, { headers: { cookie: anyCaller().cookie } }),
  );
  results.summaryCsv = await timed(`summary CSV of ${lastMonth}`, () =>
    fetch(`${base}/dashboard/usage-summary.csv?month=${lastMonth}`, { headers: { cookie: anyCaller().cookie } }),
  );
  const perWallet = Math.floor(RECORDS / WALLETS);
  results.generation = await timed('GET /v1/generations/{id}', () => {
    const c = anyCaller();
    const g = c.n + WALLETS * (1 + pick(perWallet - 1)); // a record of this wallet
    return fetch(`${base}/v1/generations/req-${g}`, { headers: { authorization: `Bearer ${c.key}` } });
  });

  // ---------- retention under inserts ----------
  const writerLatencies: { at: number; ms: number }[] = [];
  let writing = true;
  let seq = 0;
  const writer = async () => {
    while (writing) {
      const i = seq++;
      const draft: UsageRecordDraft = {
        requestId: `live-${i}`,
        walletId: walletId(i % WALLETS),
        keyId: null,
        at: new Date(),
        door: 'chat',
        model: 'b-5',
        vendor: 'b',
        route: 'b0',
        fallbackDepth: 0,
        durationMs: 10,
        traceId: null,
        prices: { basis: 'base', input: 1.25, output: 10, cache_read: 0.125, cache_write: 1.25 },
        usage: {
          input_tokens: 100,
          output_tokens: 20,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          web_search_calls: 0,
          file_search_calls: 0,
        },
      };
      const rows = [{ item: draft, chargedNano: 325n }];
      const t0 = performance.now();
      await db.transaction(async (tx) => {
        await writeChargeRows(tx, usageRecordWriter, rows);
        await writeChargeRows(tx, dailyRollupWriter, rows);
      });
      writerLatencies.push({ at: t0, ms: performance.now() - t0 });
    }
  };
  const writers = Array.from({ length: 4 }, writer);
  await new Promise((r) => setTimeout(r, 5_000));
  const oldest = (
    await db.query<{ relname: string }>(
      `SELECT min(c.relname) AS relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'usage_records'::regclass`,
    )
  ).rows[0]!.relname;
  const oldestDay = `${oldest.slice(14, 18)}-${oldest.slice(18, 20)}-${oldest.slice(20, 22)}`;
  const before = new Date(startOfKoreanDay(oldestDay).getTime() + 2 * DAY_MS);
  const droppedRows = (await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM usage_records WHERE at < $1`, [before.toISOString()]))
    .rows[0]!.n;
  let waitingMax = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      // Lock requests not granted, other than the prune's own (which may wait for earlier readers by design).
      const w = await db.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE NOT l.granted AND a.query NOT LIKE '%DETACH PARTITION%' AND a.query NOT LIKE 'DROP TABLE%'`,
      );
      waitingMax = Math.max(waitingMax, Number(w.rows[0]!.n));
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  const dropStart = performance.now();
  const outcome = await pruneUsageRecords(db, before, storage);
  const dropEnd = performance.now();
  await new Promise((r) => setTimeout(r, 1_000));
  sampling = false;
  writing = false;
  await Promise.all([...writers, sampler]);
  const baseline = writerLatencies.filter((w) => w.at < dropStart).map((w) => w.ms);
  const during = writerLatencies.filter((w) => w.at + w.ms >= dropStart && w.at <= dropEnd).map((w) => w.ms);
  results.retention = {
    droppedPartitions: outcome.droppedPartitions,
    droppedRows: Number(droppedRows),
    dropMs: +(dropEnd - dropStart).toFixed(1),
    insertsBefore: percentiles(baseline),
    insertsDuringDrop: percentiles(during),
    lockRequestsLeftWaiting: waitingMax,
  };
  log('retention', results.retention);
  console.log(
    JSON.stringify(
      { records: RECORDS, wallets: WALLETS, samples: SAMPLES, fillS: +fillS.toFixed(0), rollupS: +rollupS.toFixed(0), sizes, ...results },
      null,
      2,
    ),
  );
} finally {
  await closeGateway?.();
  if (values.keep || values.reuse) await db.close();
  else await scratch.cleanup();
  rmSync(dataDir, { recursive: true, force: true });
}
