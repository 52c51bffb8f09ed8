// Day and month boundaries are Korean standard time (UTC+9, no daylight saving). They are computed
// from the UTC instant, never from the server's or the database's time zone.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock the tests move by hand. */
export function fixedClock(start: Date | string): Clock & { set(d: Date | string): void; advance(ms: number): void } {
  let t = new Date(start).getTime();
  return {
    now: () => new Date(t),
    set: (d) => {
      t = new Date(d).getTime();
    },
    advance: (ms) => {
      t += ms;
    },
  };
}

const KST_OFFSET_MS = 9 * 3600 * 1000;

const DAY_MS = 24 * 3600 * 1000;
/** The last day asked for: every call prices itself by today's date, and formatting it each time showed in profiles. */
let lastDay = { from: 0, to: 0, date: '' };

/** The Korean calendar date (YYYY-MM-DD) of an instant. */
export function koreanDate(at: Date): string {
  const t = at.getTime();
  if (t >= lastDay.from && t < lastDay.to) return lastDay.date;
  const date = new Date(t + KST_OFFSET_MS).toISOString().slice(0, 10);
  const from = Date.parse(`${date}T00:00:00Z`) - KST_OFFSET_MS;
  lastDay = { from, to: from + DAY_MS, date };
  return date;
}

/** The Korean month (YYYY-MM) of an instant. */
export function koreanMonth(at: Date): string {
  return koreanDate(at).slice(0, 7);
}

/** The Korean days of the month of an instant: its first (YYYY-MM-DD) and the first of the next month. */
export function koreanMonthDays(at: Date): { from: string; to: string } {
  return { from: `${koreanMonth(at)}-01`, to: koreanDate(nextKoreanMonthStart(at)) };
}

/** The instant 00:00 KST starts the given Korean date. */
export function startOfKoreanDay(date: string): Date {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`not a date: ${date}`);
  return new Date(Date.parse(`${date}T00:00:00Z`) - KST_OFFSET_MS);
}

/** The next 00:00 KST after the instant. */
export function nextKoreanMidnight(at: Date): Date {
  return new Date(startOfKoreanDay(koreanDate(at)).getTime() + DAY_MS);
}

/** 00:00 KST on the first day of the next Korean month. */
export function nextKoreanMonthStart(at: Date): Date {
  const [y = 0, m = 0] = koreanMonth(at).split('-').map(Number); // koreanMonth is YYYY-MM
  const next = m === 12 ? `${y + 1}-01-01` : `${y}-${String(m + 1).padStart(2, '0')}-01`;
  return startOfKoreanDay(next);
}

/** 00:00 KST on the day after the given date: when a key that works through `date` stops. */
export function endOfKoreanDay(date: string): Date {
  return new Date(startOfKoreanDay(date).getTime() + DAY_MS);
}
