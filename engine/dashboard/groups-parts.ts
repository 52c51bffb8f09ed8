// The classes page's pieces: a class's row, its create-or-change form, the form that makes keys in it, and the
// owner's list of which managers teach it.
import type { KeyGroupRecord } from '../keys/groups.ts';
import { limitValue } from './amounts.ts';
import { confirmButton } from './confirm-close.ts';
import { type Html, html } from './html.ts';
import type { Ui } from './i18n.ts';
import { type NewKeyOffer, newKeyFields } from './keys-forms.ts';
import { csrfField } from './layout.ts';
import { amountLabel, usedText } from './limit-parts.ts';
import { type FormState, refusal, shownValue } from './refused-form.ts';

export function groupRow(ui: Ui, g: KeyGroupRecord, month: string): Html {
  const path = `/dashboard/groups/${encodeURIComponent(g.id)}`;
  return html`<tr data-group-id="${g.id}"><td><a href="${path}">${g.name}</a></td><td class="num">${ui.int(g.key_count)}</td>
<td class="num" data-testid="month">${usedText(ui, g.month_used_credits, g.monthly_limit_credits)}</td>
<td class="num" data-testid="day">${usedText(ui, g.day_used_credits, g.daily_limit_credits)}</td>
<td><a href="${path}/usage.csv?month=${month}" download>${ui.t('groups.csv', { month })}</a></td></tr>`;
}

/** The target a refused class form comes back to (refused-form.ts): the create form, or a class's change form. */
export const groupFormTarget = (groupId: string | null) => `group-${groupId ?? 'new'}`;

/** The target of a refused delete: the button under the change form, where the reason shows. */
export const GROUP_DELETE_TARGET = 'group-delete';

/** The target of the form that makes keys in a class. */
export const CLASS_KEYS_TARGET = 'class-keys';

/** The create form (g null) or a class's change form, with its delete button; `state`: a refused form as typed. */
export function groupForm(ui: Ui, csrf: string, g: KeyGroupRecord | null, state?: FormState): Html {
  const id = g ? g.id : 'new';
  const target = groupFormTarget(g?.id ?? null);
  const shown = (field: string, saved: string) => shownValue(state, target, field, saved);
  const action = g ? `/dashboard/groups/${encodeURIComponent(g.id)}` : '/dashboard/groups';
  return html`<form method="post" action="${action}">${csrfField(csrf)}
<fieldset><legend>${ui.t(g ? 'groups.change_legend' : 'groups.create_legend')}</legend>${refusal(state, target, `error-${target}`)}
<label for="gname-${id}">${ui.t('groups.field.name')}</label><input id="gname-${id}" name="name" maxlength="40" required value="${shown('name', g?.name ?? '')}">
<label for="gmonthly-${id}">${amountLabel(ui, 'keys.field.monthly')}</label><input id="gmonthly-${id}" name="monthly_limit_credits" value="${shown('monthly_limit_credits', limitValue(ui, g?.monthly_limit_credits))}">
<label for="gdaily-${id}">${amountLabel(ui, 'keys.field.daily')}</label><input id="gdaily-${id}" name="daily_limit_credits" value="${shown('daily_limit_credits', limitValue(ui, g?.daily_limit_credits))}">
<p><button type="submit">${ui.t(g ? 'groups.save' : 'groups.create')}</button></p></fieldset></form>
${g ? html`<p><small>${ui.t('groups.delete_note')}</small></p>${refusal(state, GROUP_DELETE_TARGET, `error-${GROUP_DELETE_TARGET}`)}${confirmButton(`${action}/delete`, ui.t('groups.delete'))}` : ''}`;
}

/** Makes keys in the class (one, or several with numbered names), with every field of the keys page; `state`: a refused form as typed. */
export function classKeysForm(ui: Ui, csrf: string, groupId: string, offer: NewKeyOffer, state?: FormState): Html {
  const v = (field: string, fallback = '') => shownValue(state, CLASS_KEYS_TARGET, field, fallback);
  return html`<form method="post" action="/dashboard/groups/${encodeURIComponent(groupId)}/keys">${csrfField(csrf)}
<fieldset><legend>${ui.t('groups.keys_legend')}</legend>${refusal(state, CLASS_KEYS_TARGET, `error-${CLASS_KEYS_TARGET}`)}
${newKeyFields(ui, 'ck', v, offer)}</fieldset></form>`;
}

/** The owner's view of who teaches the class: give it to a manager, or take it back. */
export function teachersBlock(
  ui: Ui,
  csrf: string,
  groupId: string,
  teachers: { identity: string; teaches: boolean; limited: boolean }[],
): Html {
  const action = `/dashboard/groups/${encodeURIComponent(groupId)}/teachers`;
  const row = (m: { identity: string; teaches: boolean; limited: boolean }) =>
    html`<li>${m.identity} — ${ui.t(m.teaches ? 'groups.teaches' : m.limited ? 'groups.teaches_other' : 'groups.whole_wallet')}
<form method="post" action="${action}" class="inline">${csrfField(csrf)}<input type="hidden" name="identity" value="${m.identity}"><input type="hidden" name="give" value="${m.teaches ? '0' : '1'}">
<button type="submit">${ui.t(m.teaches ? 'groups.take' : 'groups.give', { identity: m.identity })}</button></form></li>`;
  return html`<h2>${ui.t('groups.teachers')}</h2><p>${ui.t('groups.teachers_intro')}</p>
${teachers.length === 0 ? html`<p>${ui.t('groups.no_managers')}</p>` : html`<ul>${teachers.map(row)}</ul>`}`;
}
