// An audit entry's before and after as the owner reads them: one line per field, "Monthly limit 300 → 30
// credits" (월 한도 300 → 30 크레딧), in the page's words, rather than the stored JSON. A field this file does
// not know yet (a newer writer) is still shown, with its name and JSON value, so nothing recorded is hidden.
import { creditsToNano, displayUnitsText } from '../core/money.ts';
import { timeText } from './format.ts';
import { type Html, html } from './html.ts';
import type { MessageKey, Ui } from './i18n.ts';

type Row = Record<string, unknown> | null;

/** The stored side as fields; a writer's value that is not an object stands as one field, `value`. */
const rowOf = (v: unknown): Row =>
  v === null || v === undefined ? null : typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };

const FIELD: Record<string, MessageKey> = {
  name: 'audit.field.name',
  key_prefix: 'audit.field.key_prefix',
  audience: 'audit.field.audience',
  monthly_limit_credits: 'audit.field.monthly_limit_credits',
  daily_limit_credits: 'audit.field.daily_limit_credits',
  expires_on: 'audit.field.expires_on',
  models: 'audit.field.models',
  group_id: 'audit.field.group_id',
  groups: 'audit.field.groups',
  status: 'audit.field.status',
  reason: 'audit.field.reason',
  created_by: 'audit.field.created_by',
  owner_id: 'audit.field.owner_id',
  credits: 'audit.field.credits',
  vendors: 'audit.field.vendors',
  identity: 'audit.field.identity',
  role: 'audit.field.role',
  url: 'audit.field.url',
  events: 'audit.field.events',
  expired_credits: 'audit.field.expired_credits',
  expires_at: 'audit.field.expires_at',
  label: 'audit.field.name', // a lot's name
  credits_expiring_days: 'wh.label.credits_expiring',
  balance_percent_of_last_top_up: 'wh.label.balance_percent',
  balance_credits: 'wh.label.balance_credits',
  key_monthly_limit_percent: 'wh.label.key_monthly',
  key_daily_limit_percent: 'wh.label.key_daily',
};

/** Stored words and the page's words for them. */
const WORD: Record<string, MessageKey> = {
  active: 'audit.value.active',
  closed: 'audit.value.closed',
  slot_race: 'audit.value.slot_race',
  owner_changed: 'audit.value.owner_changed',
  student: 'audience.student',
  teacher: 'audience.teacher',
  owner: 'managers.role.owner',
  manager: 'managers.role.manager',
  viewer: 'managers.role.viewer',
};

/** The fields whose values are stored words (the rest are names, ids and addresses, shown as they are). */
const WORD_FIELDS = new Set(['status', 'reason', 'audience', 'role']);
const CREDITS = new Set(['monthly_limit_credits', 'daily_limit_credits', 'credits', 'balance_credits', 'expired_credits']);
const PERCENTS = new Set(['balance_percent_of_last_top_up', 'key_monthly_limit_percent', 'key_daily_limit_percent']);

/** The names of the classes (key groups) the entries speak of, by id: a class is named, never shown by its id. */
export type GroupNames = ReadonlyMap<string, string>;

/**
 * A value in words, its unit when it has one (so "300 → 30 credits" says the unit once), and for credits what
 * they are in the display currency, said after the line ("(₩420 → ₩42)") for an owner who thinks in won.
 */
interface Said {
  text: string;
  unit?: string;
  money?: string;
}

/** Credits as a number with its unit and, with a display currency, its whole units (rounded down, as a cap or a balance). */
const creditsSaid = (ui: Ui, credits: number): Said => ({
  text: ui.int(credits),
  unit: ui.t('audit.unit.credits'),
  ...(ui.currency ? { money: displayUnitsText(creditsToNano(credits), ui.currency, 'down') } : {}),
});

function listOf(ui: Ui, field: string, v: unknown[]): Said {
  if (field === 'vendors')
    return {
      text:
        v.length === 0
          ? ui.t('wallet.any_model')
          : ui.t('wallet.vendor_only', { vendors: v.map((x) => String(x).toUpperCase()).join(', ') }),
    };
  if (v.length === 0) return { text: ui.t(PERCENTS.has(field) || CREDITS.has(field) ? 'audit.value.off' : 'audit.value.none') };
  if (field === 'events') return { text: v.map((e) => ui.word('wh.event', String(e))).join(', ') };
  const items = v.map((x) => (typeof x === 'number' ? ui.int(x) : String(x))).join(', ');
  if (PERCENTS.has(field)) return { text: `${items}%` };
  return CREDITS.has(field) ? { text: items, unit: ui.t('audit.unit.credits') } : { text: items };
}

/** A manager's classes by name: null is a manager never limited to classes (the whole wallet), [] one left none. */
function classesOf(ui: Ui, groups: GroupNames, v: unknown): Said {
  if (!Array.isArray(v)) return { text: ui.t('groups.whole_wallet') };
  if (v.length === 0) return { text: ui.t('audit.value.none') };
  return { text: v.map((id) => groups.get(String(id)) ?? ui.t('audit.value.unknown_group')).join(', ') };
}

function sayValue(ui: Ui, groups: GroupNames, field: string, v: unknown): Said {
  if (field === 'groups') return classesOf(ui, groups, v);
  if (v === null || v === undefined) {
    if (field === 'monthly_limit_credits' || field === 'daily_limit_credits') return { text: ui.t('audit.value.no_limit') };
    if (field === 'expires_on') return { text: ui.t('audit.value.no_end') };
    if (field === 'models') return { text: ui.t('keys.all_models') };
    if (field === 'vendors') return { text: ui.t('wallet.any_model') };
    return { text: ui.t(field === 'name' ? 'unnamed' : 'audit.value.none') };
  }
  if (Array.isArray(v)) return listOf(ui, field, v);
  if (typeof v === 'number') return CREDITS.has(field) ? creditsSaid(ui, v) : { text: ui.int(v) };
  if (typeof v !== 'string') return { text: JSON.stringify(v) };
  if (field === 'expires_on' && /^\d{4}-\d{2}-\d{2}$/.test(v)) return { text: ui.day(v) };
  if (field === 'expires_at' && !Number.isNaN(Date.parse(v))) return { text: timeText(ui.locale, v) };
  if (field === 'group_id') return { text: groups.get(v) ?? ui.t('audit.value.unknown_group') };
  const word = WORD_FIELDS.has(field) ? WORD[v] : undefined;
  return { text: word ? ui.t(word) : v };
}

const withUnit = (ui: Ui, s: Said) => (s.unit ? ui.t('audit.with_unit', { value: s.text, unit: s.unit }) : s.text);

/** One field's line: both sides when it changed, the one side otherwise. */
function fieldLine(ui: Ui, groups: GroupNames, field: string, before: Row, after: Row): string {
  const label = FIELD[field] ? ui.t(FIELD[field]) : field;
  const had = before !== null && field in before;
  const has = after !== null && field in after;
  if (had && has && JSON.stringify(before[field]) !== JSON.stringify(after[field])) {
    const [b, a] = [sayValue(ui, groups, field, before[field]), sayValue(ui, groups, field, after[field])];
    const sameUnit = b.unit !== undefined && b.unit === a.unit;
    const line = ui.t('audit.change', { field: label, before: sameUnit ? b.text : withUnit(ui, b), after: withUnit(ui, a) });
    return b.money || a.money ? `${line} (${b.money ?? b.text} → ${a.money ?? a.text})` : line;
  }
  const said = sayValue(ui, groups, field, has ? after?.[field] : before?.[field]);
  const line = ui.t('audit.set', { field: label, value: withUnit(ui, said) });
  return said.money ? `${line} (${said.money})` : line;
}

/** The classes an entry speaks of, by id (a class's own entry, a key's class, a manager's classes), for the page to name once. */
export const groupIdsIn = (stored: { action: string; target_id: string | null; before: unknown; after: unknown }): string[] => [
  ...(stored.action.startsWith('key_group.') && stored.target_id ? [stored.target_id] : []),
  ...[rowOf(stored.before), rowOf(stored.after)].flatMap((r) => [
    ...(typeof r?.group_id === 'string' ? [r.group_id] : []),
    ...(Array.isArray(r?.groups) ? r.groups.filter((g): g is string => typeof g === 'string') : []),
  ]),
];

/** The change of one audit entry, a line per field in the order the writer gave them. */
export function changeText(ui: Ui, stored: { before: unknown; after: unknown }, groups: GroupNames = new Map()): Html {
  const [before, after] = [rowOf(stored.before), rowOf(stored.after)];
  // The stored JSON keeps no field order: ours is the table's above, a field it lacks after them. A key made
  // or removed lists what it had; an empty setting (no limit, every model) is its default and left out.
  const order = Object.keys(FIELD);
  const rank = (f: string) => (order.includes(f) ? order.indexOf(f) : order.length);
  const oneSided = before === null || after === null;
  const fields = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])]
    .filter((f) => !oneSided || (before ?? after)?.[f] !== null)
    .sort((a, b) => rank(a) - rank(b));
  if (fields.length === 0) return html`—`;
  return html`<span class="wrap">${fields.map((f, i) => html`${i > 0 ? html`<br>` : ''}${fieldLine(ui, groups, f, before, after)}`)}</span>`;
}
