// What is probably a mistake in a model but may be right (a sale end not yet marked retired, a scheduled price
// whose date has come, a price outside any vendor's range), so it warns and never stops a start or a reload.

import type { ModelEntry } from '../core/types.ts';
import { modelDates } from './catalog-dates.ts';
import { type PriceUnit, pricesOf } from './price-units.ts';

export interface CatalogWarning {
  /** `file:line` of the field. */
  at: string;
  message: string;
  /** A date that has come: `catalog check --strict` refuses it, so a cleanup can be enforced in CI. */
  pastDate: boolean;
}

/** `file:line: warning: reason`, as `catalog check` and the start print it. */
export const formatWarning = (w: CatalogWarning) => `${w.at}: warning: ${w.message}`;

/**
 * The dearest sane price per unit, in USD. Far above what vendors list today (at most $600 per 1M tokens,
 * $0.36 per image, $0.25 per second of video, $30 per 1M characters), so a figure above it is a slip
 * rather than a price.
 */
const SANE_MAX_USD: Record<PriceUnit, number> = {
  'per 1M tokens': 1000,
  'per image': 10,
  'per second': 10,
  'per 1M characters': 1000,
};

/** Warnings as of the Korean date `today` (YYYY-MM-DD); `at` places a path inside a model in its file. */
export function modelWarnings(
  models: Iterable<ModelEntry>,
  at: (m: ModelEntry, path: (string | number)[]) => string,
  today: string,
): CatalogWarning[] {
  const out: CatalogWarning[] = [];
  for (const m of models) {
    const warn = (path: (string | number)[], message: string, pastDate = false) =>
      out.push({ at: at(m, path), message: `model '${m.id}': ${message}`, pastDate });
    for (const { path, date, role } of modelDates(m)) {
      // Dates compare as text; one that names no day is refused by model-checks.ts.
      const come = date <= today;
      if (role === 'sale-end') {
        const found = saleEndWarning(m, date, come, path);
        if (found) warn(found.path, found.message, found.pastDate);
      } else if (come) {
        warn(path, `the scheduled price from ${date} is in force: make it the base input and output price and remove the entry`, true);
      }
    }
    for (const price of pricesOf(m.pricing)) {
      const max = SANE_MAX_USD[price.unit];
      if (typeof price.usd === 'number' && price.usd > max) {
        warn(price.path, `${price.label} is $${price.usd} ${price.unit}, above the sane $${max}: check the figure and its unit`);
      }
    }
    if (m.kind === 'text') for (const { path, message } of freeOutput(m)) warn(path, message);
  }
  return out;
}

/**
 * A sale end that has come is news once: the operator marks the model `retired: true` and keeps the entry,
 * whose callers are then told its successor, and neither the start nor `--strict` speaks of it again. The
 * mark may be set ahead of the date; the model is sold until then all the same (model-lookup.ts).
 */
function saleEndWarning(
  m: ModelEntry,
  date: string,
  come: boolean,
  path: (string | number)[],
): { path: (string | number)[]; message: string; pastDate: boolean } | null {
  if (!come || m.retired) return null;
  const message = `sale_ends ${date} has come: the model is no longer sold (mark it \`retired: true\` to keep pointing its callers to '${m.successor}' without this warning, or remove it once they have moved)`;
  return { path, message, pastDate: true };
}

/** A text model that charges for input but not for output: every answer would be given away. */
function freeOutput(m: ModelEntry): { path: (string | number)[]; message: string }[] {
  const p = m.pricing;
  const pairs: { path: (string | number)[]; what: string; input?: number | undefined; output?: number | undefined }[] = [
    { path: ['pricing', 'output'], what: 'pricing.output', input: p.input, output: p.output },
    ...(p.tiers ?? []).map((t, i) => ({
      path: ['pricing', 'tiers', i, 'output'],
      what: `tier above ${t.above_input_tokens} output`,
      input: t.input,
      output: t.output,
    })),
    ...(p.scheduled ?? []).map((s, i) => ({
      path: ['pricing', 'scheduled', i, 'output'],
      what: `scheduled from ${s.from} output`,
      input: s.input,
      output: s.output,
    })),
  ];
  return pairs
    .filter(({ input, output }) => (input ?? 0) > 0 && output !== undefined && output <= 0)
    .map(({ path, what, input }) => ({
      path,
      message: `${what} is $0 per 1M tokens while input costs $${input}: every answer would be free`,
    }));
}
