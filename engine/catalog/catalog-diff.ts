// What a reviewer needs from a catalog change: one row per changed price, tier, threshold, context
// window, sale-end date or successor, old → new, with the percentage for prices.
import { parse } from 'yaml';

type Raw = Record<string, unknown>;
export type RawModels = Map<string, Raw>;

export interface DiffRow {
  model: string;
  field: string;
  old: string;
  new: string;
  change: string;
}

/** Models of one catalog, from file texts (read from the working tree or a git ref). */
export function rawModels(files: { name: string; text: string }[]): RawModels {
  const out: RawModels = new Map();
  for (const f of files) {
    const doc = (parse(f.text) ?? {}) as { models?: Record<string, Raw> };
    for (const [id, m] of Object.entries(doc.models ?? {})) out.set(id, m ?? {});
  }
  return out;
}

const PRICE_FIELDS = ['input', 'output', 'cache_read', 'cache_write', 'image_reservation', 'image_charge', 'per_mchar'];

/** Flattens the reviewed fields of one model into `field → value`. */
function reviewedFields(m: Raw): Map<string, { value: unknown; price: boolean }> {
  const out = new Map<string, { value: unknown; price: boolean }>();
  const pricing = (m.pricing ?? {}) as Raw;
  for (const f of PRICE_FIELDS) if (pricing[f] !== undefined) out.set(`pricing.${f}`, { value: pricing[f], price: true });
  for (const t of (pricing.tiers ?? []) as Raw[]) {
    const at = `tier above ${t.above_input_tokens}`;
    out.set(`${at} threshold`, { value: t.above_input_tokens, price: false });
    out.set(`${at} input`, { value: t.input, price: true });
    out.set(`${at} output`, { value: t.output, price: true });
  }
  for (const s of (pricing.scheduled ?? []) as Raw[]) {
    out.set(`scheduled from ${s.from} input`, { value: s.input, price: true });
    out.set(`scheduled from ${s.from} output`, { value: s.output, price: true });
  }
  for (const [res, v] of Object.entries((pricing.video_per_second ?? {}) as Raw)) {
    out.set(`video ${res} per second`, { value: v, price: true });
  }
  for (const f of ['context_window', 'max_output', 'sale_ends', 'successor']) {
    if (m[f] !== undefined && m[f] !== null) out.set(f, { value: m[f], price: false });
  }
  return out;
}

export function diffCatalogs(before: RawModels, after: RawModels): DiffRow[] {
  const rows: DiffRow[] = [];
  const ids = [...new Set([...before.keys(), ...after.keys()])].sort();
  for (const id of ids) {
    const a = before.get(id);
    const b = after.get(id);
    if (!a) {
      rows.push({ model: id, field: '(model)', old: '—', new: 'added', change: 'new model' });
      continue;
    }
    if (!b) {
      rows.push({ model: id, field: '(model)', old: 'present', new: '—', change: 'removed' });
      continue;
    }
    const fa = reviewedFields(a);
    const fb = reviewedFields(b);
    for (const field of [...new Set([...fa.keys(), ...fb.keys()])]) {
      const va = fa.get(field);
      const vb = fb.get(field);
      if (va?.value === vb?.value) continue;
      rows.push({
        model: id,
        field,
        old: show(va?.value),
        new: show(vb?.value),
        change: (va?.price || vb?.price) ? percentChange(va?.value, vb?.value) : '',
      });
    }
  }
  return rows;
}

const show = (v: unknown) => (v === undefined || v === null ? '—' : String(v));

function percentChange(a: unknown, b: unknown): string {
  if (typeof a !== 'number' || typeof b !== 'number') return '';
  if (a === 0) return b === 0 ? '0%' : 'from 0';
  const pct = ((b - a) / a) * 100;
  return `${pct > 0 ? '+' : ''}${Number(pct.toFixed(2))}%`;
}

export function renderDiffTable(rows: DiffRow[]): string {
  if (rows.length === 0) return 'No price, tier, threshold, context, sale-end or successor changes.\n';
  const lines = ['| Model | Field | Old | New | Change |', '|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.model} | ${r.field} | ${r.old} | ${r.new} | ${r.change} |`);
  return lines.join('\n') + '\n';
}
