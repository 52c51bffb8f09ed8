// Every price a model holds, with what it is paid for: a figure means nothing to a reviewer without its unit, and a
// price's sane range depends on it. Tiers are named by threshold and scheduled prices by date, so two versions
// compare the same tier with itself even when another is inserted.
import type { Pricing } from '../core/types.ts';

export type PriceUnit = 'per 1M tokens' | 'per image' | 'per second' | 'per 1M characters';

interface PriceEntry {
  /** Where the price sits inside the model (`pricing`, `tiers`, 0, `input`). */
  path: (string | number)[];
  /** Its name for a reader, stable across versions: `pricing.input`, `tier above 200000 output`. */
  label: string;
  /** USD, as written (a catalog read from git may hold anything). */
  usd: unknown;
  unit: PriceUnit;
}

const TOKEN_FIELDS: (keyof Pricing)[] = ['input', 'output', 'cache_read', 'cache_write', 'cache_write_1h'];
const MEDIA_FIELDS: [keyof Pricing, PriceUnit][] = [
  ['image_reservation', 'per image'],
  ['image_charge', 'per image'],
  ['per_mchar', 'per 1M characters'],
];

type Raw = Record<string, unknown>;
/** A YAML mapping as read, or an empty one for anything else (a version read from git may hold anything). */
export const asRecord = (v: unknown): Raw => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : {});
const asList = (v: unknown): Raw[] => (Array.isArray(v) ? v.map(asRecord) : []);

/** The prices of a `pricing` block, in a reader's order: base, tiers by threshold, scheduled by date, media. */
export function pricesOf(pricing: unknown): PriceEntry[] {
  const p = asRecord(pricing);
  const out: PriceEntry[] = [];
  for (const field of TOKEN_FIELDS) {
    if (p[field] !== undefined) out.push({ path: ['pricing', field], label: `pricing.${field}`, usd: p[field], unit: 'per 1M tokens' });
  }
  asList(p.tiers).forEach((tier, i) => {
    for (const side of ['input', 'output']) {
      const label = `tier above ${String(tier.above_input_tokens)} ${side}`;
      out.push({ path: ['pricing', 'tiers', i, side], label, usd: tier[side], unit: 'per 1M tokens' });
    }
  });
  asList(p.scheduled).forEach((s, i) => {
    for (const side of ['input', 'output']) {
      const label = `scheduled from ${String(s.from)} ${side}`;
      out.push({ path: ['pricing', 'scheduled', i, side], label, usd: s[side], unit: 'per 1M tokens' });
    }
  });
  for (const [field, unit] of MEDIA_FIELDS) {
    if (p[field] !== undefined) out.push({ path: ['pricing', field], label: `pricing.${field}`, usd: p[field], unit });
  }
  for (const [resolution, usd] of Object.entries(asRecord(p.video_per_second))) {
    out.push({
      path: ['pricing', 'video_per_second', resolution],
      label: `pricing.video_per_second.${resolution}`,
      usd,
      unit: 'per second',
    });
  }
  return out;
}
