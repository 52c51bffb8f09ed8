// The dates a model carries (its sale end, the days its scheduled prices start). The schema checks their
// shape only: `2027-02-30` passes it, and JavaScript reads it as 2 March, a day nobody wrote.
import type { ModelEntry } from '../core/types.ts';

interface ModelDate {
  /** Where the date sits inside the model. */
  path: (string | number)[];
  /** The field: `sale_ends`, `pricing.scheduled[0].from`. */
  label: string;
  date: string;
  role: 'sale-end' | 'scheduled';
}

export function modelDates(m: ModelEntry): ModelDate[] {
  const out: ModelDate[] = [];
  if (m.sale_ends) out.push({ path: ['sale_ends'], label: 'sale_ends', date: m.sale_ends, role: 'sale-end' });
  (m.pricing.scheduled ?? []).forEach((s, i) => {
    out.push({ path: ['pricing', 'scheduled', i, 'from'], label: `pricing.scheduled[${i}].from`, date: s.from, role: 'scheduled' });
  });
  return out;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** Why `YYYY-MM-DD` names no day of the calendar (`February 2027 has 28 days`), or undefined when it does. */
export function impossibleDate(date: string): string | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!match) return 'it is not written YYYY-MM-DD';
  const [year = 0, month = 0, day = 0] = match.slice(1).map(Number); // the pattern's three groups
  if (month < 1 || month > 12) return `there is no month ${month}`;
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > days) return `${MONTHS[month - 1]} ${year} has ${days} days`;
  return undefined;
}
