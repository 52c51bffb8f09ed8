// The recent calls as CSV (RFC 4180), and a month's summary from the daily rollup. Key names are the owner's input: a cell that a spreadsheet would read
// as a formula (= + - @ at the start) gets a leading apostrophe, so opening the file runs nothing.
import type { UsageRecordView } from '../usage/records.ts';
import type { RollupRow } from '../usage/daily-rollup.ts';
import { exactCredits } from './html.ts';

const HEADER = [
  'id', 'created_at', 'key_id', 'key_name', 'door', 'model', 'vendor', 'route', 'fallback_depth', 'input_tokens',
  'cache_read_tokens', 'cache_write_tokens', 'output_tokens', 'reasoning_tokens', 'server_tool_calls', 'characters',
  'images', 'video_seconds', 'charged_nano', 'charged_credits', 'duration_ms', 'trace_id',
];

export function csvCell(v: string | number | null): string {
  if (v === null) return '';
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function usageCsv(rows: UsageRecordView[], keyName: (id: string | null) => string): string {
  const lines = [HEADER.join(',')];
  for (const r of rows) {
    lines.push(
      [
        r.id, r.created_at, r.key_id, r.key_id ? keyName(r.key_id) : null, r.door, r.model, r.vendor, r.route, r.fallback_depth,
        r.tokens.input, r.tokens.cache_read, r.tokens.cache_write, r.tokens.output, r.tokens.reasoning, r.server_tool_calls,
        r.characters, r.images, r.video_seconds, r.charged_nano, exactCredits(BigInt(r.charged_nano)).replace(/,/g, ''), r.duration_ms,
        r.trace_id,
      ]
        .map(csvCell)
        .join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}

const SUMMARY_HEADER = [
  'day', 'key_id', 'key_name', 'model', 'calls', 'input_tokens', 'cache_read_tokens', 'cache_write_tokens', 'output_tokens',
  'charged_nano', 'charged_credits',
];

/** The month's summary per Korean day, key and model, from the daily rollup, with a total line last. */
export function usageSummaryCsv(rows: RollupRow[], keyName: (id: string | null) => string): string {
  const lines = [SUMMARY_HEADER.join(',')];
  const credits = (nano: bigint) => exactCredits(nano).replace(/,/g, '');
  let calls = 0;
  let nano = 0n;
  for (const r of rows) {
    calls += r.calls;
    nano += r.chargedNano;
    lines.push(
      [r.day, r.keyId, r.keyId ? keyName(r.keyId) : null, r.model, r.calls, r.inputTokens, r.cacheReadTokens, r.cacheWriteTokens, r.outputTokens, r.chargedNano.toString(), credits(r.chargedNano)]
        .map(csvCell)
        .join(','),
    );
  }
  lines.push(['total', null, null, null, calls, null, null, null, null, nano.toString(), credits(nano)].map(csvCell).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
