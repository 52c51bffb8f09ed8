// Which language a dashboard answer speaks, and its texts. The wallet owners are Korean schools, so the
// dashboard speaks Korean and English: the `lang` cookie (set by the switch on every page, lang-switch.ts)
// wins, then the browser's Accept-Language, and English when it names neither.
import type { FastifyRequest } from 'fastify';
import type { DisplayCurrency, Rounding } from '../core/money.ts';
import { requestSlot } from '../http/request-slots.ts';
import * as format from './format.ts';
import { escapeHtml, Html } from './html.ts';
import { isLocale, type Locale } from './locale.ts';
import { en } from './messages/en.ts';
import { ko } from './messages/ko.ts';
import type { MessageKey, Messages } from './messages/types.ts';
import { PARAM_WITH_PARTICLE, particleFor } from './particles.ts';

export type { MessageKey } from './messages/types.ts';

const CATALOGS: Record<Locale, Messages> = { en, ko };

export const LANG_COOKIE = 'lang';

/** The first of our locales the header names, by its q-weights (ties keep the header's order); null when none. */
export function fromAcceptLanguage(header: string | undefined): Locale | null {
  if (!header) return null;
  const ranges = header
    .split(',')
    .map((part, i) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)).find((m) => m !== null);
      return { lang: (tag ?? '').trim().toLowerCase().split('-')[0]!, q: q ? Number(q[1]) : 1, i };
    })
    .filter((r) => r.q > 0 && Number.isFinite(r.q))
    .sort((a, b) => b.q - a.q || a.i - b.i);
  return ranges.map((r) => r.lang).find(isLocale) ?? null;
}

/** The request's locale: the switch's cookie, else Accept-Language, else English. */
export function localeOf(req: FastifyRequest | undefined): Locale {
  if (!req) return 'en';
  // Parsed by @fastify/cookie (session-http.ts), which only the dashboard's requests have.
  const chosen = req.cookies?.[LANG_COOKIE];
  if (isLocale(chosen)) return chosen;
  const h = req.headers['accept-language'];
  return fromAcceptLanguage(Array.isArray(h) ? h.join(',') : h) ?? 'en';
}

export type Params = Record<string, string | number | bigint | Html | null | undefined>;

function fill(text: string, params: Params | undefined, render: (v: Params[string]) => string): string {
  if (!params) return text;
  // One pass, so a value is never read as a parameter; a Korean particle after one is settled from its value.
  return text.replace(PARAM_WITH_PARTICLE, (whole, name: string, between: string | undefined, pair: string | undefined) => {
    if (!(name in params)) return whole;
    const value = render(params[name]);
    return pair === undefined ? value : `${value}${between}${particleFor(plain(params[name]), pair)}`;
  });
}

const plain = (v: Params[string]): string => (v instanceof Html ? v.text : String(v ?? ''));

/** A text of the locale's catalog with its `{name}` parameters filled in, as plain text (the html template escapes it). */
export function t(locale: Locale, key: MessageKey, params?: Params): string {
  return fill(CATALOGS[locale][key], params, (v) => (v instanceof Html ? v.text : String(v ?? '')));
}

/**
 * A catalog text that carries our own markup (<strong>, <code>, <a>), as Html: the text is trusted (it is
 * ours), every parameter is escaped unless it is Html already.
 */
export function th(locale: Locale, key: MessageKey, params?: Params): Html {
  return new Html(fill(CATALOGS[locale][key], params, (v) => (v instanceof Html ? v.text : escapeHtml(String(v ?? '')))));
}

/**
 * Whether a message is in the locale already. The gateway's own messages (API errors, the key checks) are
 * English only, so in Korean a message with Hangul in it was written from the Korean catalog.
 */
export const saysLocale = (locale: Locale, text: string): boolean => locale === 'en' || /[\uAC00-\uD7A3]/.test(text);

/** Texts and formats bound to one locale and the operator's display currency: what a page builds itself with. */
export const uiOf = (locale: Locale, currency: DisplayCurrency | null = null) => ({
  locale,
  currency,
  t: (key: MessageKey, params?: Params) => t(locale, key, params),
  th: (key: MessageKey, params?: Params) => th(locale, key, params),
  /** A name of the gateway's (a door, a webhook event or delivery state, a video's failure) in the locale's words; unknown, as it is. */
  word: (kind: 'door' | 'wh.event' | 'wh.state' | 'videos.error', name: string): string =>
    `${kind}.${name}` in en ? t(locale, `${kind}.${name}` as MessageKey) : name,
  /** Whole credits, grouped ('—' for none). */
  credits: (n: number | null | undefined) => format.wholeCredits(locale, n),
  /** Exact credits of nano-USD: three decimals. */
  exact: (nano: bigint) => format.exactCredits(locale, nano),
  /**
   * Money of nano-USD: the display currency first with the dollars beside, or the dollars alone; `down` for
   * what the wallet has, `up` for what was spent or is held (core/money.ts Rounding).
   */
  money: (nano: bigint, rounding: Rounding) => format.money(locale, currency, nano, rounding),
  moneyOfCredits: (credits: number, rounding: Rounding) => format.money(locale, currency, BigInt(credits) * 1000n, rounding),
  int: (n: number | bigint) => format.integer(locale, n),
  num: (n: number) => format.decimal(locale, n),
  /** An instant in Korean time labelled KST; a dash for never. */
  time: (iso: string | null | undefined): Html =>
    iso ? format.time(locale, iso) : new Html(`<span aria-label="${escapeHtml(t(locale, 'never'))}">—</span>`),
  day: (day: string) => format.koreanDay(locale, day),
});
export type Ui = ReturnType<typeof uiOf>;

// Two locales, two bundles per display currency in force: built once, shared by every request.
const UIS: Record<Locale, Ui> = { en: uiOf('en'), ko: uiOf('ko') };
const withCurrency = new Map<string, Ui>();

/** The display currency of the config in force for this request, set by the dashboard before any page. */
export const requestCurrency = requestSlot<DisplayCurrency | null>('dashboard_display_currency');

/** The request's texts and formats. */
export function uiFor(req: FastifyRequest | undefined): Ui {
  const locale = localeOf(req);
  const currency = req ? requestCurrency.get(req) : undefined;
  if (!currency) return UIS[locale];
  const key = `${locale}:${currency.code}:${currency.per_usd}`;
  let ui = withCurrency.get(key);
  if (!ui) {
    if (withCurrency.size > 16) withCurrency.clear(); // a rate changed by reloads: keep only recent ones
    withCurrency.set(key, (ui = uiOf(locale, currency)));
  }
  return ui;
}
