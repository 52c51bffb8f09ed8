// What a reviewer needs from a catalog change: every changed field of every model, the whole card of a model added
// or removed, and every change to a rule. Pure, so it compares a working tree with any git ref.
import { parse } from 'yaml';
import { type CardLine, modelCard, ruleCard, showValue } from './price-card.ts';
import { asRecord } from './price-units.ts';

type Raw = Record<string, unknown>;
type RawModels = Map<string, Raw>;

export interface DiffRow {
  /** A model id, or `rule <name>` for a rule of config/rules.yaml. */
  model: string;
  field: string;
  old: string;
  new: string;
  unit: string;
  change: string;
}

/** The doors a model without a `doors:` line is on, by its kind and vendor. */
type DoorsServing = (kind: string, vendor: string) => string[];

/** Models of one catalog, from file texts, each with its file's vendor and (given `serving`) its doors filled in. */
export function rawModels(files: { name: string; text: string }[], serving?: DoorsServing): RawModels {
  const out: RawModels = new Map();
  for (const f of files) {
    const doc = asRecord(parse(f.text));
    for (const [id, value] of Object.entries(asRecord(doc.models))) {
      const m = { ...asRecord(value) };
      m.vendor ??= doc.vendor;
      if (m.doors === undefined && serving && typeof m.kind === 'string' && typeof m.vendor === 'string')
        m.doors = serving(m.kind, m.vendor);
      out.set(id, m);
    }
  }
  return out;
}

/** Which doors serve a kind and vendor, from the text of config/doors.yaml. */
export function doorsServingIn(doorsYaml: string): DoorsServing {
  const doors = Object.entries(asRecord(parse(doorsYaml)));
  return (kind, vendor) =>
    doors
      .filter(([, door]) => {
        const serves = asRecord(asRecord(door).serves);
        return (
          Array.isArray(serves.kinds) && serves.kinds.includes(kind) && Array.isArray(serves.vendors) && serves.vendors.includes(vendor)
        );
      })
      .map(([name]) => name);
}

/** The rules of config/rules.yaml, from its text. */
export function rawRules(text: string): Map<string, Raw> {
  return new Map(Object.entries(asRecord(parse(text))).map(([name, rule]) => [name, asRecord(rule)]));
}

export function diffCatalogs(before: RawModels, after: RawModels): DiffRow[] {
  return diffAll(before, after, modelCard, (id) => id, 'model');
}

export function diffRules(before: Map<string, Raw>, after: Map<string, Raw>): DiffRow[] {
  return diffAll(before, after, ruleCard, (name) => `rule ${name}`, 'rule');
}

function diffAll(
  before: Map<string, Raw>,
  after: Map<string, Raw>,
  card: (r: Raw) => CardLine[],
  subject: (id: string) => string,
  noun: string,
): DiffRow[] {
  const rows: DiffRow[] = [];
  for (const id of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const a = before.get(id);
    const b = after.get(id);
    const name = subject(id);
    if (!a || !b) {
      const added = !a;
      rows.push({
        model: name,
        field: `(${noun})`,
        old: added ? '—' : 'present',
        new: added ? 'added' : '—',
        unit: '',
        change: added ? `new ${noun}` : 'removed',
      });
      for (const line of card((b ?? a)!)) {
        const value = showValue(line.value);
        rows.push({ model: name, field: line.field, old: added ? '—' : value, new: added ? value : '—', unit: line.unit, change: '' });
      }
      continue;
    }
    rows.push(...changedLines(name, card(a), card(b)));
  }
  return rows;
}

/** Lines that differ, in the newer card's order, then those the newer card dropped. */
function changedLines(name: string, a: CardLine[], b: CardLine[]): DiffRow[] {
  const old = new Map(a.map((l) => [l.field, l]));
  const now = new Map(b.map((l) => [l.field, l]));
  const fields = [...new Set([...now.keys(), ...old.keys()])];
  const rows: DiffRow[] = [];
  for (const field of fields) {
    const was = old.get(field);
    const is = now.get(field);
    const oldText = showValue(was?.value);
    const newText = showValue(is?.value);
    if (oldText === newText) continue;
    rows.push({ model: name, field, old: oldText, new: newText, unit: (is ?? was)!.unit, change: describeChange(was, is) });
  }
  return rows;
}

function describeChange(was: CardLine | undefined, is: CardLine | undefined): string {
  // A list emptied reads `none` (a plain line), yet what left it is the change.
  const kinds = [was?.kind, is?.kind];
  const kind = kinds.includes('price') ? 'price' : kinds.includes('list') ? 'list' : 'plain';
  if (kind === 'price') {
    if (!was) return 'new price';
    if (!is) return 'price removed';
    return percentChange(was.value, is.value);
  }
  if (kind === 'list') {
    const before = Array.isArray(was?.value) ? (was.value as string[]) : [];
    const after = Array.isArray(is?.value) ? (is.value as string[]) : [];
    const joined = after.filter((x) => !before.includes(x));
    const left = before.filter((x) => !after.includes(x));
    return [joined.length ? `added ${joined.join(', ')}` : '', left.length ? `removed ${left.join(', ')}` : ''].filter(Boolean).join('; ');
  }
  return '';
}

function percentChange(a: unknown, b: unknown): string {
  if (typeof a !== 'number' || typeof b !== 'number') return '';
  if (a === 0) return b === 0 ? '0%' : 'from 0';
  const pct = ((b - a) / a) * 100;
  return `${pct > 0 ? '+' : ''}${Number(pct.toFixed(2))}%`;
}
