// The keys' month figures are sums of the daily rollup (engine/keys/key-use.ts): retention never prunes the rollup's
// days of the Korean month it runs in, nor of the month before (a reserve decided just before a month's end is
// counted against it), however short limits.usage_record_days is. Older days go with their records.
import { afterEach, expect, it } from 'vitest';
import { migrate } from '../../engine/db/migrate.ts';
import { openPglite } from '../../engine/db/pglite.ts';
import { pruneUsageRecords } from '../../engine/usage/retention.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it("keeps the rollup's days of this Korean month and the last, whatever the records' retention", async () => {
  const db = await openPglite();
  cleanups.push(() => db.close());
  await migrate(db);
  for (const day of ['2026-02-27', '2026-02-28', '2026-03-01', '2026-03-31', '2026-04-01', '2026-04-09', '2026-04-10'])
    await db.query(
      `INSERT INTO usage_daily (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens,
         cache_write_tokens, output_tokens) VALUES ($1::date, 'w', 'k', 'm', 1, 1, 0, 0, 0, 0)`,
      [day],
    );
  const days = async () =>
    (await db.query<{ d: string }>(`SELECT to_char(day, 'YYYY-MM-DD') AS d FROM usage_daily ORDER BY day`)).rows.map((r) => r.d);
  // 2026-04-10 10:00 KST, one day of records kept: the records go before 04-09, the rollup only before March.
  const now = new Date('2026-04-10T01:00:00Z');
  await pruneUsageRecords(db, new Date(now.getTime() - 86_400_000), undefined, now);
  expect(await days()).toEqual(['2026-03-01', '2026-03-31', '2026-04-01', '2026-04-09', '2026-04-10']);
  // A month later, with 90 days kept, the rollup keeps what the records keep (more than the two months).
  await pruneUsageRecords(db, new Date('2026-03-31T03:00:00Z'), undefined, new Date('2026-05-20T01:00:00Z'));
  expect(await days()).toEqual(['2026-03-31', '2026-04-01', '2026-04-09', '2026-04-10']);
});
