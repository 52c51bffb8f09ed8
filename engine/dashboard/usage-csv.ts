// The recent calls as CSV (RFC 4180). Key names are the owner's input: a cell that a spreadsheet would read
// as a formula (= + - @ at the start) gets a leading apostrophe, so opening the file runs nothing.
// The file is for programs as much as for people, so it is the same in every language of the dashboard:
// English column names, ISO instants, plain numbers without grouping (never the page's locale).
import type { UsageRecordView } from '../usage/records.ts';
import { exactCredits } from './format.ts';

// Machine-readable: stays English whatever the page's language.
const HEADER = [
  'id', 'created_at', 'key_id', 'key_name', 'door', 'model', 'vendor', 'route', 'fallback_depth', 'input_tokens',
  'cache_read_tokens', 'cache_write_tokens', 'output_tokens', 'reasoning_tokens', 'server_tool_calls', 'characters',
  'images', 'video_seconds', 'charged_nano', 'charged_credits', 'duration_ms',
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
        r.characters, r.images, r.video_seconds, r.charged_nano, exactCredits('en', BigInt(r.charged_nano)).replace(/,/g, ''), r.duration_ms,
      ]
        .map(csvCell)
        .join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}
