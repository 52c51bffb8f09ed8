// HTML forms arrive as text; the key doors' checks (keys/validate.ts) take JSON values. These turn one into
// the other without deciding anything: a number stays text when it is not one, so the same check refuses it
// with the same message as on the doors.
import { errors } from '../core/errors.ts';
import { creditsFromText } from './amounts.ts';
import type { Ui } from './i18n.ts';

export type FormBody = Record<string, string>;

/** Parses application/x-www-form-urlencoded; the first value of a repeated field wins. */
export function parseForm(text: string): FormBody {
  const out: FormBody = {};
  for (const [k, v] of new URLSearchParams(text)) if (!(k in out)) out[k] = v;
  return out;
}

export function formOf(body: unknown): FormBody {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body) || Object.values(body).some((v) => typeof v !== 'string')) {
    throw errors.invalidRequest('Send the form as application/x-www-form-urlencoded.');
  }
  return body as FormBody;
}

/** A whole number when the text is one, else the text (so the check names the field). */
const numberOrText = (v: string): number | string => (/^\d{1,15}$/.test(v.trim()) ? Number(v.trim()) : v);

/**
 * The fields of a form that the owner filled, as a key door body: a blank field is left out (`blank:
 * 'omit'`, creating) or sent as null (`blank: 'null'`, changing: clearing a limit removes it). Amount fields
 * (field → its label in the locale) take credits or dollars as typed (amounts.ts), refused in the locale's words.
 */
export function doorBody(
  form: FormBody,
  fields: { text?: string[]; amounts?: Record<string, string> },
  blank: 'omit' | 'null',
  ui: Pick<Ui, 'locale' | 'currency'> = { locale: 'en', currency: null },
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const amounts = fields.amounts ?? {};
  for (const f of [...(fields.text ?? []), ...Object.keys(amounts)]) {
    if (!(f in form)) continue;
    const v = form[f]!.trim();
    if (v === '') {
      if (blank === 'null') out[f] = null;
      continue;
    }
    out[f] = f in amounts ? creditsFromText(v, f, amounts[f]!, ui.locale, ui.currency) : form[f];
  }
  return out;
}

/**
 * The `models` field of a key form (ids or patterns separated by commas or spaces) as the door's list; blank is
 * left out when creating and null (every model) when changing, as for the other fields.
 */
export function modelsField(form: FormBody, blank: 'omit' | 'null'): { models?: string[] | null } {
  if (!('models' in form)) return {};
  const list = form.models.split(/[\s,]+/).filter((m) => m !== '');
  if (list.length > 0) return { models: list };
  return blank === 'null' ? { models: null } : {};
}

/** The two limit fields of a key or a class form, each with its label in the locale. */
export const limitFields = (ui: Pick<Ui, 't'>) => ({
  monthly_limit_credits: ui.t('keys.field.monthly'),
  daily_limit_credits: ui.t('keys.field.daily'),
});

/**
 * A new-keys form as the create door's body, on the keys page and on a class's page alike: one key takes the name
 * as is, several take it as the prefix of their numbered names (as on the door).
 */
export function newKeysBody(form: FormBody, ui: Ui): Record<string, unknown> {
  const count = form.count?.trim() ? numberOrText(form.count) : 1;
  return {
    ...doorBody(form, { text: ['audience', 'expires_on', 'group_id'], amounts: limitFields(ui) }, 'omit', ui),
    count,
    ...modelsField(form, 'omit'),
    ...(form.name?.trim() ? { [count === 1 ? 'name' : 'name_prefix']: form.name } : {}),
  };
}

/** A query parameter as one short string, or undefined when absent or blank; 400 when it is not one. */
export function queryText(query: unknown, name: string, max = 200): string | undefined {
  const q = (query ?? {}) as Record<string, unknown>;
  const v = q[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || v.length > max) throw errors.invalidRequest(`${name} must be one value of up to ${max} characters.`, name);
  return v;
}
