// The key page's forms and rows: the create form (target 'new'), and each key's row with its change form
// (target the key's id). A refused form comes back filled in as typed (refused-form.ts).
import type { GroupChoice } from '../keys/groups.ts';
import type { ApiKeyRecord } from '../keys/records.ts';
import { MAX_COUNT } from '../keys/validate.ts';
import { limitValue } from './amounts.ts';
import { closeButton } from './confirm-close.ts';
import { type Html, html } from './html.ts';
import type { MessageKey, Ui } from './i18n.ts';
import { csrfField } from './layout.ts';
import { amountLabel, usedText } from './limit-parts.ts';
import { type FormState, refusal, shownValue } from './refused-form.ts';

// What config/callers.yaml, as shipped, refuses to student keys; said beside the field that sets it. The
// option values stay the API's words (student, teacher); only what they show is the locale's. Teacher keys are
// offered to whole-wallet managers only, or to a key that is already one (group-scope.ts, checkTeacherKey).
function audienceSelect(ui: Ui, id: string, current: string | null, teacherKeys: boolean): Html {
  const opt = (v: 'student' | 'teacher') =>
    html`<option value="${v}"${current === v ? html` selected` : ''}>${ui.t(`audience.${v}`)}</option>`;
  return html`<label for="${id}">${ui.t('keys.field.audience')}</label><select id="${id}" name="audience" aria-describedby="audience-hint">${opt('student')}${teacherKeys || current === 'teacher' ? opt('teacher') : ''}</select>
<small id="audience-hint">${ui.th('keys.audience_hint')}</small>`;
}

/**
 * What every key row of a table shares. `canChange` false (a viewer): rows without their change form and close
 * button. `classes`: the wallet's classes (a teacher's own), for the class column and the move; `wholeWallet`:
 * whether the manager is not a teacher limited to classes, and so may take a key out of every class (the key would
 * leave a teacher's classes) and give teacher keys.
 */
export interface KeyRows {
  csrf: string;
  splitsUsage: boolean;
  today: string;
  state?: FormState | undefined;
  canChange: boolean;
  classes: readonly GroupChoice[];
  wholeWallet: boolean;
  /** Whether the table names each key's class (not on a class's own page, where every key is that class's). */
  classColumn: boolean;
}

/** The head of a table of key rows. */
export function keyTableHead(ui: Ui, rows: KeyRows): Html {
  const { t } = ui;
  const th = (key: MessageKey, num = false) => html`<th scope="col"${num ? html` class="num"` : ''}>${t(key)}</th>`;
  return html`<thead><tr>${th('col.name')}${th('col.key')}${rows.classColumn ? th('keys.col.class') : ''}${rows.splitsUsage ? th('keys.col.audience') : ''}${th('keys.col.month', true)}${th('keys.col.day', true)}${th('keys.col.until')}${th('keys.col.models')}${th('col.last_used')}${th('col.actions')}</tr></thead>`;
}

/** The class select of a key's change form: its classes, and no class where the key may leave them all. */
function classSelect(ui: Ui, id: string, rows: KeyRows, current: string): Html {
  const opt = (value: string, text: string) => html`<option value="${value}"${value === current ? html` selected` : ''}>${text}</option>`;
  return html`<label for="${id}">${ui.t('keys.field.class')}</label><select id="${id}" name="group_id">${
    rows.wholeWallet || current === '' ? opt('', ui.t('keys.no_class')) : ''
  }${rows.classes.map((c) => opt(c.id, c.name))}</select>`;
}

const className = (ui: Ui, rows: KeyRows, id: string | null) =>
  id === null ? html`<em>${ui.t('keys.no_class')}</em>` : (rows.classes.find((c) => c.id === id)?.name ?? id);

export function keyRow(ui: Ui, k: ApiKeyRecord, rows: KeyRows): Html {
  const { csrf, splitsUsage, today, state, canChange } = rows;
  const { t } = ui;
  const label = k.name ?? k.key_prefix;
  const v = (field: string, saved: string) => shownValue(state, k.id, field, saved);
  const refused = state?.target === k.id;
  return html`<tr data-key-id="${k.id}">
<td>${k.name ?? html`<em>${t('unnamed')}</em>`}</td><td><code>${k.key_prefix}</code></td>
${rows.classColumn ? html`<td data-testid="class">${className(ui, rows, k.group_id)}</td>` : ''}
${splitsUsage ? html`<td>${k.audience === 'student' || k.audience === 'teacher' ? t(`audience.${k.audience}`) : k.audience}</td>` : ''}
<td class="num">${usedText(ui, k.month_used_credits, k.monthly_limit_credits, 'month')}</td>
<td class="num">${usedText(ui, k.day_used_credits, k.daily_limit_credits, 'day')}</td>
<td>${k.usable_until ? ui.day(k.usable_until) : t('never')}</td><td data-testid="models">${k.models ? k.models.join(', ') : t('keys.all_models')}</td><td>${ui.time(k.last_used_at)}</td>
<td>${
    canChange
      ? html`
<details${refused ? html` open` : ''}><summary>${t('keys.change')}<span class="skip"> ${label}</span></summary>
<form method="post" action="/dashboard/keys/${encodeURIComponent(k.id)}">${csrfField(csrf)}
${refusal(state, k.id, `error-${k.id}`)}
<label for="name-${k.id}">${t('keys.field.name')}</label><input id="name-${k.id}" name="name" maxlength="40" value="${v('name', k.name ?? '')}">
${rows.classes.length > 0 ? classSelect(ui, `class-${k.id}`, rows, v('group_id', k.group_id ?? '')) : ''}
${splitsUsage ? audienceSelect(ui, `aud-${k.id}`, v('audience', k.audience ?? ''), rows.wholeWallet) : ''}
<label for="monthly-${k.id}">${amountLabel(ui, 'keys.field.monthly')}</label><input id="monthly-${k.id}" name="monthly_limit_credits" value="${v('monthly_limit_credits', limitValue(ui, k.monthly_limit_credits))}">
<label for="daily-${k.id}">${amountLabel(ui, 'keys.field.daily')}</label><input id="daily-${k.id}" name="daily_limit_credits" value="${v('daily_limit_credits', limitValue(ui, k.daily_limit_credits))}">
<label for="expires-${k.id}">${t('keys.field.last_day_one')}</label><input id="expires-${k.id}" name="expires_on" type="date" min="${today}" value="${v('expires_on', k.usable_until ?? '')}">
<label for="models-${k.id}">${t('keys.field.models')}</label><input id="models-${k.id}" name="models" value="${v('models', k.models?.join(', ') ?? '')}">
<p><button type="submit">${t('keys.save', { label })}</button></p>
</form>
${closeButton(ui, `/dashboard/keys/${encodeURIComponent(k.id)}/close`, label)}
</details>`
      : ''
  }
</td></tr>`;
}

/** What a form of new keys offers: the audience where usage is split, teacher keys to whole-wallet managers. */
export interface NewKeyOffer {
  splitsUsage: boolean;
  today: string;
  wholeWallet: boolean;
}

/**
 * The fields a new key (or several, numbered) is made with, on the keys page and on a class's page alike: `id`
 * prefixes the inputs' ids, `v` reads a refused form's values.
 */
export function newKeyFields(
  ui: Ui,
  id: string,
  v: (field: string, fallback?: string) => string,
  offer: NewKeyOffer,
  classes?: KeyRows,
): Html {
  const { t } = ui;
  const { splitsUsage, today } = offer;
  return html`<label for="${id}-count">${t('keys.field.count')}</label><input id="${id}-count" name="count" type="number" min="1" max="${MAX_COUNT}" value="${v('count', '1')}">
<label for="${id}-name">${t('keys.field.name_numbered')}</label><input id="${id}-name" name="name" maxlength="40" value="${v('name')}">
${classes && classes.classes.length > 0 ? classSelect(ui, `${id}-class`, classes, v('group_id')) : ''}
${splitsUsage ? audienceSelect(ui, `${id}-audience`, v('audience', 'student'), offer.wholeWallet) : ''}
<label for="${id}-monthly">${amountLabel(ui, 'keys.field.monthly')}</label><input id="${id}-monthly" name="monthly_limit_credits" value="${v('monthly_limit_credits')}">
<label for="${id}-daily">${amountLabel(ui, 'keys.field.daily')}</label><input id="${id}-daily" name="daily_limit_credits" value="${v('daily_limit_credits')}">
<label for="${id}-expires">${t('keys.field.last_day_many')}</label><input id="${id}-expires" name="expires_on" type="date" min="${today}" value="${v('expires_on')}">
<label for="${id}-models">${t('keys.field.models')}</label><input id="${id}-models" name="models" value="${v('models')}">
<p><button type="submit">${t('keys.create')}</button></p>`;
}

/** The keys page's create form, where the owner may put the new keys in a class. */
export function createForm(ui: Ui, rows: KeyRows): Html {
  const v = (field: string, fallback = '') => shownValue(rows.state, 'new', field, fallback);
  return html`<form method="post" action="/dashboard/keys">${csrfField(rows.csrf)}
<fieldset><legend>${ui.t('keys.create_legend')}</legend>
${refusal(rows.state, 'new', 'error-new')}
${newKeyFields(ui, 'new', v, rows, rows)}
</fieldset></form>`;
}
