// A model (or a rule) as a reviewer reads it, one line per field, so the diff compares cards line by line. Cards
// are built from the YAML as written, which from git may not pass the schema, so every field is read defensively.
import { asRecord, pricesOf } from './price-units.ts';

export interface CardLine {
  /** A name stable across versions: `pricing.input`, `tier above 200000 output`, `data_handling.region`. */
  field: string;
  value: unknown;
  /** What the figure counts: `USD per 1M tokens`, `tokens`, or '' when it is no amount. */
  unit: string;
  /** Prices get a percentage when they change, lists say what joined and what left. */
  kind: 'price' | 'list' | 'plain';
}

type Raw = Record<string, unknown>;
const present = (v: unknown) => v !== undefined && v !== null;

/** vendor, kind, doors, context, every price (tiers by threshold, scheduled by date), effort, rules, sale end, retired, data handling, source. */
export function modelCard(m: Raw): CardLine[] {
  const lines: CardLine[] = [];
  const plain = (field: string, value: unknown, unit = '') => {
    if (present(value)) lines.push({ field, value, unit, kind: 'plain' });
  };
  /** `none` is what an empty or absent list means, when that is worth a line of the card. */
  const list = (field: string, value: unknown, none?: string) => {
    if (Array.isArray(value) && value.length > 0) lines.push({ field, value: value.map(String), unit: '', kind: 'list' });
    else if (present(value) && !Array.isArray(value)) plain(field, value);
    else if (none) plain(field, none);
  };
  plain('vendor', m.vendor);
  plain('kind', m.kind);
  // Without a `doors:` line the model is on every door serving its kind and vendor (resolved when config/doors.yaml was at hand).
  if (present(m.doors)) list('doors', m.doors);
  else plain('doors', 'every door serving its kind and vendor');
  plain('context_window', m.context_window, 'tokens');
  plain('max_output', m.max_output, 'tokens');
  for (const price of pricesOf(m.pricing)) lines.push({ field: price.label, value: price.usd, unit: `USD ${price.unit}`, kind: 'price' });
  list('effort_levels', m.effort_levels, 'not accepted');
  list('rules', m.rules, 'none');
  plain('sale_ends', m.sale_ends, 'date (KST)');
  plain('successor', m.successor);
  plain('retired', m.retired);
  for (const [key, value] of Object.entries(asRecord(m.data_handling))) plain(`data_handling.${key}`, value);
  plain('source', m.source);
  list('assumed', m.assumed);
  return lines;
}

/** Every field of a rule: lists of names as lists, conditions and messages as written. */
export function ruleCard(r: Raw): CardLine[] {
  return Object.entries(r)
    .filter(([, value]) => present(value))
    .map(([field, value]): CardLine => {
      const names = Array.isArray(value) && value.every((v) => typeof v !== 'object' || v === null);
      return names ? { field, value: value.map(String), unit: '', kind: 'list' } : { field, value, unit: '', kind: 'plain' };
    });
}

/** A value as a table cell shows it. */
export function showValue(v: unknown): string {
  if (!present(v)) return '—';
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object' || x === null)) return v.join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
