// The recent calls as CSV, and a month's summary from the daily rollup. A cell a spreadsheet would read as a formula
// gets a leading apostrophe, since key names are the owner's input; the file is the same in every language.

import type { FastifyReply } from 'fastify';
import { type DisplayCurrency, displayUnitsAddingUp, usdText } from '../core/money.ts';
import { csvCell } from '../http/csv-cell.ts';
import type { UsageCsvRow } from '../usage/csv-rows.ts';
import type { RollupRow } from '../usage/daily-rollup.ts';
import { exactCredits } from './format.ts';

/**
 * A download for the owner's spreadsheet. It starts with a byte-order mark: without one, Excel on a Korean Windows
 * reads the file as CP949 and garbles every Hangul name. Scripts read the admin API's CSV, which has none.
 */
export function sendCsv(reply: FastifyReply, filename: string, body: string) {
  return reply
    .headers({
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${filename}"`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    })
    .send(`\uFEFF${body}`);
}

// Machine-readable: stays English whatever the page's language.
const HEADER = [
  'id',
  'created_at',
  'key_id',
  'key_name',
  'door',
  'model',
  'vendor',
  'route',
  'fallback_depth',
  'input_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'output_tokens',
  'reasoning_tokens',
  'server_tool_calls',
  'characters',
  'images',
  'video_seconds',
  'charged_nano',
  'charged_credits',
  'duration_ms',
  'trace_id',
];

/**
 * The per-call CSV. The numeric cells come rendered from the database (engine/usage/csv-rows.ts says why); the
 * strings are escaped here, and a key's name cell is made once per key, not once per row.
 */
export function usageCsv(rows: readonly UsageCsvRow[], keyName: (id: string | null) => string): string {
  const nameCells = new Map<string, string>();
  const nameCell = (id: string): string => {
    let cell = nameCells.get(id);
    if (cell === undefined) nameCells.set(id, (cell = csvCell(keyName(id))));
    return cell;
  };
  const lines = [HEADER.join(',')];
  for (const r of rows) {
    const key = r.key_id === null ? ',' : `${csvCell(r.key_id)},${nameCell(r.key_id)}`;
    lines.push(
      `${csvCell(r.request_id)},${r.created_at},${key},${csvCell(r.door)},${csvCell(r.model)},${csvCell(r.vendor)},${csvCell(r.route)},${r.counts},${csvCell(r.trace_id)}`,
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}

const SUMMARY_HEADER = [
  'day',
  'key_id',
  'key_name',
  'model',
  'calls',
  'input_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'output_tokens',
  'charged_nano',
  'charged_credits',
];

/**
 * The month's summary per Korean day, key and model, from the daily rollup, with a total line last. The
 * charge is in nano-USD and credits, then in dollars and, with billing.yaml's display currency, its whole
 * units (`charged_krw`: the total rounded up as a charge is, and the lines adding up to it, so a school's
 * accountant can check the column): columns added at the end, so programs reading the earlier ones by position
 * read what they did.
 */
export function usageSummaryCsv(
  rows: RollupRow[],
  keyName: (id: string | null) => string,
  currency: DisplayCurrency | null = null,
): string {
  const header = [...SUMMARY_HEADER, 'charged_usd', ...(currency ? [`charged_${currency.code.toLowerCase()}`] : [])];
  const lines = [header.join(',')];
  const credits = (nano: bigint) => exactCredits('en', nano).replace(/,/g, '');
  const units = currency
    ? displayUnitsAddingUp(
        rows.map((r) => r.chargedNano),
        currency,
      )
    : null;
  const money = (nano: bigint, unitsOf: bigint | undefined) => [usdText(nano), ...(unitsOf === undefined ? [] : [unitsOf.toString()])];
  let calls = 0;
  let nano = 0n;
  for (const [i, r] of rows.entries()) {
    calls += r.calls;
    nano += r.chargedNano;
    lines.push(
      [
        r.day,
        r.keyId,
        r.keyId ? keyName(r.keyId) : null,
        r.model,
        r.calls,
        r.inputTokens,
        r.cacheReadTokens,
        r.cacheWriteTokens,
        r.outputTokens,
        r.chargedNano.toString(),
        credits(r.chargedNano),
        ...money(r.chargedNano, units?.parts[i]),
      ]
        .map(csvCell)
        .join(','),
    );
  }
  lines.push(
    ['total', null, null, null, calls, null, null, null, null, nano.toString(), credits(nano), ...money(nano, units?.total)]
      .map(csvCell)
      .join(','),
  );
  return `${lines.join('\r\n')}\r\n`;
}
