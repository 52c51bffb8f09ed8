// A refused form says what was wrong in the form's words and the owner's language, not the API's: the shared key
// checks speak English and name JSON fields. A message this table does not know yet falls back to an English
// rewrite, so no refusal is ever lost.
import type { GatewayError } from '../core/errors.ts';
import * as format from './format.ts';
import { type MessageKey, saysLocale, t, type Ui, uiOf } from './i18n.ts';

type Groups = Record<string, string>;

/** The validate.ts messages, one pattern each, and the catalog text that says it in the form's words. */
const RULES: [RegExp, MessageKey][] = [
  [/^(?<field>\w+) must be 1 to (?<max>\d+) characters\.$/, 'formerr.length'],
  [/^(?<field>name) is required: the group \(class\) name, 1 to (?<max>\d+) characters\.$/, 'formerr.length'],
  [/^(?<field>\w+) may not start with '(?<prefix>[^']*)': that prefix is reserved for team-chat keys\.$/, 'formerr.reserved_prefix'],
  [/^(?<field>\w+) must be a whole number of credits \(0 or more\), or null for no limit\.$/, 'formerr.whole_credits'],
  [/^name '(?<name>.*)' is already another group's in this wallet/, 'formerr.group_name_taken'],
  [/^group_id: this key has calls in progress/, 'formerr.key_move_busy'],
  [/^group_id: this key has spent this month/, 'formerr.key_move_spent'],
  [/^audience must be 'student' or 'teacher'\.$/, 'formerr.audience'],
  [/^expires_on must be a date YYYY-MM-DD, or null for no expiry\.$/, 'formerr.date'],
  [/^expires_on (?<date>\d{4}-\d{2}-\d{2}) is earlier than today \((?<today>\d{4}-\d{2}-\d{2}), Korean time\)\./, 'formerr.date_past'],
  [/^models must be a list of up to (?<max>\d+) model ids or patterns .*?, or null for every model; (?<why>.*)\.$/, 'formerr.models'],
  [/^daily_limit_credits \((?<daily>\d+)\) must not exceed monthly_limit_credits \((?<monthly>\d+)\)\.$/, 'formerr.daily_over_monthly'],
  [/^audience 'student' needs a wallet that splits usage/, 'formerr.no_split'],
  [/^count must be a whole number from 1 to (?<max>\d+)\.$/, 'formerr.count'],
  [/^The numbered names \('(?<names>.*)'\) would exceed (?<max>\d+) characters; .*\(up to (?<prefix>\d+)\)\.$/, 'formerr.numbered_names'],
  // The alerts page's forms (alerts/store.ts, alerts/address-guard.ts).
  [/^url is required/, 'formerr.url_required'],
  [/^url must (be an absolute http or https URL|use https \(or http\))\.$/, 'formerr.url_absolute'],
  [/^url must not carry a user name or password/, 'formerr.url_credentials'],
  [/^url must be at most (?<max>\d+) characters\.$/, 'formerr.url_length'],
  [/^url: the gateway delivers only to public addresses it can reach; '(?<host>[^']*)' is not one\.$/, 'formerr.url_unreachable'],
  [/^url: the host '(?<host>[^']*)' resolves to (?<address>[^,]+), a private, loopback or reserved address/, 'formerr.url_private'],
  [/^events must be a non-empty list of/, 'formerr.events'],
  [/^A wallet has at most (?<max>\d+) webhooks; delete one first\.$/, 'formerr.webhooks_max'],
  [/^(?<field>\w+) must be a list of up to (?<max>\d+) numbers\.$/, 'formerr.list_length'],
  [/^(?<field>\w+): (?<value>.*) is not a whole percent from 1 to (?<max>\d+)\.$/, 'formerr.percent'],
  [/^(?<field>\w+): (?<value>.*) is not a positive whole number of credits\.$/, 'formerr.positive_credits'],
  [/^(?<field>credits_expiring_days) must be a whole number of days from 1 to (?<max>\d+)\.$/, 'formerr.expiring_days'],
];

/** Why a models list was refused (the end of the models message). */
const MODEL_REASONS: [RegExp, MessageKey][] = [
  [/^it is not a list$/, 'formerr.models_not_list'],
  [/^(?<n>\d+) were sent$/, 'formerr.models_too_many'],
  [/^models\[\d+\] (?<entry>\(.*\)) is not one$/, 'formerr.models_entry'],
];

const FIELDS: Record<string, MessageKey> = {
  monthly_limit_credits: 'formerr.field.monthly_limit_credits',
  daily_limit_credits: 'formerr.field.daily_limit_credits',
  expires_on: 'formerr.field.expires_on',
  name: 'formerr.field.name',
  name_prefix: 'formerr.field.name',
  models: 'formerr.field.models',
  audience: 'formerr.field.audience',
  count: 'formerr.field.count',
  balance_percent_of_last_top_up: 'wh.label.balance_percent',
  balance_credits: 'wh.label.balance_credits',
  key_monthly_limit_percent: 'wh.label.key_monthly',
  key_daily_limit_percent: 'wh.label.key_daily',
  credits_expiring_days: 'wh.label.credits_expiring',
};

// The English rewrite the table falls back to, for a message it does not know.
const FIELD_WORDS: [RegExp, string][] = [
  [/\bmonthly_limit_credits\b/g, 'the monthly limit'],
  [/\bdaily_limit_credits\b/g, 'the daily limit'],
  [/\bexpires_on\b/g, 'the last day'],
  [/\bname_prefix\b/g, 'the name'],
  [/\bname\b(?= must| may)/g, 'the name'],
  [/\bmodels\[\d+\]/g, 'one entry'],
  [/\bmodels\b(?= must)/g, 'the models'],
  [/\baudience\b(?= must|')/g, 'the audience'],
  [/\bcount\b(?= must)/g, 'how many'],
  [/, or null for no limit/g, ', or blank for no limit'],
  [/, or null for no expiry/g, ', or blank for never'],
  [/, or null for every model/g, ', or blank for every model'],
  [/ To close a key now, use DELETE \/v1\/keys\/\{id\}\./g, ' To stop a key now, close it.'],
  [/ a list of up to/g, ' up to'],
];

const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function englishRewrite(message: string): string {
  let text = message;
  for (const [re, words] of FIELD_WORDS) text = text.replace(re, words);
  return capitalised(text);
}

function firstMatch(rules: [RegExp, MessageKey][], text: string): { key: MessageKey; groups: Groups } | null {
  for (const [re, key] of rules) {
    const m = re.exec(text);
    if (m) return { key, groups: { ...m.groups } };
  }
  return null;
}

/**
 * The refusal in the form's words, in the page's locale; limits it names are money as the page shows it (won
 * first with the shipped display currency, the way the owner typed them), credits without one.
 */
export function inWords(e: GatewayError, ui: Ui = uiOf('en')): string {
  const { locale } = ui;
  const hit = firstMatch(RULES, e.message);
  if (!hit) {
    // Refusals the dashboard made itself (amounts.ts) are in the locale already.
    if (saysLocale(locale, e.message)) return locale === 'en' ? englishRewrite(e.message) : e.message;
    return t(locale, 'formerr.unknown', { detail: englishRewrite(e.message) });
  }
  const g = hit.groups;
  const params: Record<string, string> = { ...g };
  if (g.field) {
    const label = FIELDS[g.field];
    params.field = label ? t(locale, label) : g.field;
  }
  for (const d of ['date', 'today'] as const) if (g[d]) params[d] = format.koreanDay(locale, g[d]);
  // A limit is the owner's own figure: it rounds up, so a typed won amount reads back as typed.
  for (const l of ['daily', 'monthly'] as const)
    if (g[l]) params[l] = ui.currency ? ui.moneyOfCredits(Number(g[l]), 'up') : ui.credits(Number(g[l]));
  if (g.why !== undefined) {
    const reason = firstMatch(MODEL_REASONS, g.why);
    params.why = reason ? t(locale, reason.key, reason.groups) : g.why;
  }
  return capitalised(t(locale, hit.key, params));
}
