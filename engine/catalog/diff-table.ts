// The catalog diff as a Markdown table, for a terminal and for a pull-request comment alike.
import type { DiffRow } from './catalog-diff.ts';

export function renderDiffTable(rows: DiffRow[]): string {
  if (rows.length === 0) return 'No price, rule, door or other model changes.\n';
  const lines = ['| Model | Field | Old | New | Unit | Change |', '|---|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${[r.model, r.field, r.old, r.new, r.unit, r.change].map(cell).join(' | ')} |`);
  return `${lines.join('\n')}\n`;
}

/** A rule's message may hold a `|` or a line break, either of which would split the table. */
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
