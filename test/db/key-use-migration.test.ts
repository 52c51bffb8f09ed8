// Migration 024: a key's day and month figures become sums of its usage_daily rows and api_key_usage goes. A
// deployment upgraded with counters and rollup rows keeps every amount its counters held: where a counter holds
// more than the rollup sums (a charge whose usage record was refused kept only its count; a charge counted on the
// day after its record's), the difference joins the rollup, so the derived figures equal the old counters.
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { MIGRATIONS_DIR, migrate } from '../../engine/db/migrate.ts';
import { openPglite } from '../../engine/db/pglite.ts';
import { createKeyService } from '../../engine/keys/index.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const MIGRATION = '024_key_use_from_rollup.sql';

it('keeps what the counters counted, in the rollup the figures now sum, and drops the counters', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-key-use-'));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  // The database as it was before 024: the migrations from it on are applied by the upgrade, in their order.
  const upgrade = readdirSync(dir)
    .filter((f) => f.endsWith('.sql') && f >= MIGRATION)
    .sort();
  for (const f of upgrade) rmSync(join(dir, f));
  const db = await openPglite();
  cleanups.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => db.close(),
  );
  await migrate(db, { dir });

  await db.query(`INSERT INTO wallets (id, owner_id) VALUES ('w1', 'o1')`);
  for (const k of ['k1', 'k2', 'k3'])
    await db.query(`INSERT INTO api_keys (id, wallet_id, kind, secret_hash, key_prefix) VALUES ($1, 'w1', 'api', $1, $1)`, [k]);
  const daily = `INSERT INTO usage_daily (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens,
                   cache_write_tokens, output_tokens) VALUES ($1::date, 'w1', $2, $3, 1, $4::bigint, 0, 0, 0, 0)`;
  const counter = `INSERT INTO api_key_usage (key_id, scope, period, used_nano) VALUES ($1, $2, $3, $4::bigint)`;
  // k1: counters and rollup agree (two models on one day, one on another).
  await db.query(daily, ['2026-05-03', 'k1', 'm1', '100']);
  await db.query(daily, ['2026-05-03', 'k1', 'm2', '50']);
  await db.query(daily, ['2026-05-04', 'k1', 'm1', '25']);
  await db.query(counter, ['k1', 'day', '2026-05-03', '150']);
  await db.query(counter, ['k1', 'day', '2026-05-04', '25']);
  await db.query(counter, ['k1', 'month', '2026-05', '175']);
  // k2: a charge whose record was refused counted 40 on 05-03 beyond its rollup; one with no record at all on 05-05.
  await db.query(daily, ['2026-05-03', 'k2', 'm1', '60']);
  await db.query(counter, ['k2', 'day', '2026-05-03', '100']);
  await db.query(counter, ['k2', 'day', '2026-05-05', '7']);
  await db.query(counter, ['k2', 'month', '2026-05', '107']);
  // k3: a month counter whose day rows are gone (its days pruned): its rest lands on the month's first day.
  await db.query(daily, ['2026-04-20', 'k3', 'm1', '30']);
  await db.query(counter, ['k3', 'month', '2026-04', '90']);

  expect(await migrate(db, { dir: MIGRATIONS_DIR })).toEqual(upgrade);

  const gone = await db.query(`SELECT to_regclass('api_key_usage') IS NULL AS gone`);
  expect(gone.rows[0]).toEqual({ gone: true });
  const index = await db.query(`SELECT indexdef FROM pg_indexes WHERE indexname = 'usage_daily_key_day'`);
  expect(index.rows).toHaveLength(1);

  const keys = createKeyService(db, { clock: fixedClock('2026-05-03T03:00:00Z') });
  const figures = async (at: string) => {
    const u = await keys.quota.usage(['k1', 'k2', 'k3'], new Date(at));
    return Object.fromEntries([...u].map(([k, v]) => [k, [v.dayNano, v.monthNano]]));
  };
  // 12:00 Korean time on 05-03, 05-04, 05-05, and on 04-20.
  expect(await figures('2026-05-03T03:00:00Z')).toEqual({ k1: [150n, 175n], k2: [100n, 107n], k3: [0n, 0n] });
  expect(await figures('2026-05-04T03:00:00Z')).toEqual({ k1: [25n, 175n], k2: [0n, 107n], k3: [0n, 0n] });
  expect(await figures('2026-05-05T03:00:00Z')).toEqual({ k1: [0n, 175n], k2: [7n, 107n], k3: [0n, 0n] });
  expect(await figures('2026-04-20T03:00:00Z')).toEqual({ k1: [0n, 0n], k2: [0n, 0n], k3: [30n, 90n] });
  // The rollup's own rows are untouched: the differences are rows of model '' with no calls.
  const added = await db.query<{ day: string; key_id: string; calls: string; nano: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, key_id, calls::text AS calls, charged_nano::text AS nano
       FROM usage_daily WHERE model = '' ORDER BY key_id, day`,
  );
  expect(added.rows).toEqual([
    { day: '2026-05-03', key_id: 'k2', calls: '0', nano: '40' },
    { day: '2026-05-05', key_id: 'k2', calls: '0', nano: '7' },
    { day: '2026-04-01', key_id: 'k3', calls: '0', nano: '60' },
  ]);
});
