// The per-call CSV reads its numbers rendered by the database (engine/usage/csv-rows.ts), for speed. It must
// say exactly what the CSV said when it was rendered here from each record's view: the same cells, the same
// escaping of the owner's strings (quotes, commas, a spreadsheet formula), empty cells for what is null.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { exactCredits } from '../../engine/dashboard/format.ts';
import { usageCsv } from '../../engine/dashboard/usage-csv.ts';
import { writeChargeRows } from '../../engine/db/charge-rows.ts';
import type { Db } from '../../engine/db/db.ts';
import { csvCell } from '../../engine/http/csv-cell.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { listUsageCsvRows } from '../../engine/usage/csv-rows.ts';
import { usageRecordStorage } from '../../engine/usage/record-storage.ts';
import { listUsageRecords, type UsageRecordDraft, type UsageRecordView, usageRecordWriter } from '../../engine/usage/records.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { TEST_NOW } from '../helpers/gateway.ts';

/** The CSV as it was rendered from the records' views before (the reference). */
function csvFromViews(rows: UsageRecordView[], keyName: (id: string | null) => string): string {
  const lines = [
    'id,created_at,key_id,key_name,door,model,vendor,route,fallback_depth,input_tokens,cache_read_tokens,cache_write_tokens,output_tokens,reasoning_tokens,server_tool_calls,characters,images,video_seconds,charged_nano,charged_credits,duration_ms,trace_id',
  ];
  for (const r of rows) {
    const cells = [
      r.id,
      r.created_at,
      r.key_id,
      r.key_id ? keyName(r.key_id) : null,
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
    ];
    lines.push(cells.map(csvCell).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

describeEachDatabase('the per-call CSV', (getDb) => {
  it('says what the records say, cell for cell', async () => {
    const db: Db = getDb();
    const at = new Date(Date.parse(TEST_NOW) - 3_600_000);
    await (await usageRecordStorage(db)).prepare(at);
    const wallet = await createLedger(db, { clock: fixedClock(new Date(TEST_NOW)), owner: 'csv' }).createWallet({ credits: 10 });
    const base = { walletId: wallet.id, door: 'chat', vendor: 'b', fallbackDepth: 0, durationMs: 12, prices: null };
    const usage = {
      input_tokens: 100,
      output_tokens: 7,
      cache_read_tokens: 3,
      cache_write_tokens: 0,
      web_search_calls: 0,
      file_search_calls: 0,
    };
    const drafts: [UsageRecordDraft, bigint][] = [
      [{ ...base, requestId: 'plain', keyId: 'k-plain', at, model: 'b-5', route: 'b0', traceId: 'abc', usage }, 1_234_567n],
      [{ ...base, requestId: 'no-key', keyId: null, at: new Date(at.getTime() + 1), model: 'b-5', route: null, traceId: null, usage }, 0n],
      [
        {
          ...base,
          requestId: '=cmd|"x",y',
          keyId: 'k-formula',
          at: new Date(at.getTime() + 2),
          model: 'm,"q"',
          route: '-r',
          traceId: null,
          usage: { ...usage, reasoning_tokens: 40, characters: 9000, images: 2, video_seconds: 2.5, web_search_calls: 3 },
        },
        999n,
      ],
      [
        {
          ...base,
          requestId: 'big',
          keyId: 'k-plain',
          at: new Date(at.getTime() + 3),
          model: 'b-5',
          route: 'b0',
          traceId: null,
          usage: { ...usage, input_tokens: 2 ** 40 },
        },
        98_765_432_109n,
      ],
    ];
    await db.transaction((tx) =>
      writeChargeRows(
        tx,
        usageRecordWriter,
        drafts.map(([item, chargedNano]) => ({ item, chargedNano })),
      ),
    );
    const names: Record<string, string> = { 'k-plain': 'plain key', 'k-formula': '=HYPERLINK("evil")' };
    const keyName = (id: string | null) => (id ? (names[id] ?? id) : '');
    const filter = { limit: 100 };
    const views = await listUsageRecords(db, wallet.id, filter);
    expect(views).toHaveLength(4);
    const csv = usageCsv(await listUsageCsvRows(db, wallet.id, filter), keyName);
    expect(csv).toBe(csvFromViews(views, keyName));
    expect(csv).toContain(`'=HYPERLINK(""evil"")`);
  });
});
