// The key page's forms and rows: the create form, and each key's row with its change form. A refused form
// comes back filled with what the owner typed and the reason in words beside it (FormState), rather than on
// an error page of its own.
import type { ApiKeyRecord } from '../keys/records.ts';
import { MAX_COUNT } from '../keys/validate.ts';
import { usdOfCredits } from './amounts.ts';
import { closeButton } from './confirm-close.ts';
import type { FormBody } from './form.ts';
import { credits, html, koreanTime, type Html } from './html.ts';
import { csrfField } from './layout.ts';

/** A refused form as typed, with the reason: `target` is 'new' (the create form) or the changed key's id. */
export interface FormState {
  target: string;
  values: FormBody;
  message: string;
}

const MODELS_LABEL = 'Models it may call (ids or patterns such as b-*, separated by commas; blank for every model)';
const AMOUNT_HINT = 'credits such as 500,000, or dollars such as $5 or 5 USD; blank for none';

// What config/callers.yaml, as shipped, refuses to student keys; said beside the field that sets it.
const AUDIENCE_HINT = html`<small id="audience-hint">A <strong>student</strong> key cannot search the web, read web pages, reach remote MCP servers or
make videos; a <strong>teacher</strong> key can.</small>`;

/** The value a field shows: what was typed when this form was refused, else the saved one. */
const valueOf = (state: FormState | undefined, target: string, field: string, saved: string) =>
  state && state.target === target ? (state.values[field] ?? '') : saved;

const refusal = (state: FormState | undefined, target: string, id: string) =>
  state && state.target === target ? html`<p class="error" role="alert" id="${id}">${state.message}</p>` : '';

function audienceSelect(id: string, current: string | null): Html {
  const opt = (v: string) => html`<option value="${v}"${current === v ? html` selected` : ''}>${v}</option>`;
  return html`<label for="${id}">Audience</label><select id="${id}" name="audience" aria-describedby="audience-hint">${opt('student')}${opt('teacher')}</select>
${AUDIENCE_HINT}`;
}

/** `canChange` false (a viewer): the row without its change form and close button. */
export function keyRow(k: ApiKeyRecord, csrf: string, splitsUsage: boolean, today: string, state?: FormState, canChange = true): Html {
  const label = k.name ?? k.key_prefix;
  const v = (field: string, saved: string) => valueOf(state, k.id, field, saved);
  const refused = state?.target === k.id;
  return html`<tr data-key-id="${k.id}">
<td>${k.name ?? html`<em>unnamed</em>`}</td><td><code>${k.key_prefix}</code></td>
${splitsUsage ? html`<td>${k.audience}</td>` : ''}
<td class="num"><span data-testid="month">${credits(k.month_used_credits)}${k.monthly_limit_credits === null ? ' (no limit)' : html` of ${credits(k.monthly_limit_credits)}`}</span>
<small class="usd">${usdOfCredits(k.month_used_credits)}${k.monthly_limit_credits === null ? '' : html` of ${usdOfCredits(k.monthly_limit_credits)}`}</small></td>
<td class="num"><span data-testid="day">${credits(k.day_used_credits)}${k.daily_limit_credits === null ? ' (no limit)' : html` of ${credits(k.daily_limit_credits)}`}</span>
<small class="usd">${usdOfCredits(k.day_used_credits)}${k.daily_limit_credits === null ? '' : html` of ${usdOfCredits(k.daily_limit_credits)}`}</small></td>
<td>${k.usable_until ?? 'never'}</td><td data-testid="models">${k.models ? k.models.join(', ') : 'all'}</td><td>${koreanTime(k.last_used_at)}</td>
<td>${canChange ? html`
<details${refused ? html` open` : ''}><summary>Change<span class="skip"> ${label}</span></summary>
<form method="post" action="/dashboard/keys/${encodeURIComponent(k.id)}">${csrfField(csrf)}
${refusal(state, k.id, `error-${k.id}`)}
<label for="name-${k.id}">Name</label><input id="name-${k.id}" name="name" maxlength="40" value="${v('name', k.name ?? '')}">
${splitsUsage ? audienceSelect(`aud-${k.id}`, v('audience', k.audience ?? '')) : ''}
<label for="monthly-${k.id}">Monthly limit (${AMOUNT_HINT})</label><input id="monthly-${k.id}" name="monthly_limit_credits" value="${v('monthly_limit_credits', k.monthly_limit_credits === null ? '' : credits(k.monthly_limit_credits))}">
<label for="daily-${k.id}">Daily limit (${AMOUNT_HINT})</label><input id="daily-${k.id}" name="daily_limit_credits" value="${v('daily_limit_credits', k.daily_limit_credits === null ? '' : credits(k.daily_limit_credits))}">
<label for="expires-${k.id}">Last day it works (Korean date; blank for never)</label><input id="expires-${k.id}" name="expires_on" type="date" min="${today}" value="${v('expires_on', k.usable_until ?? '')}">
<label for="models-${k.id}">${MODELS_LABEL}</label><input id="models-${k.id}" name="models" value="${v('models', k.models?.join(', ') ?? '')}">
<p><button type="submit">Save changes to ${label}</button></p>
</form>
${closeButton(`/dashboard/keys/${encodeURIComponent(k.id)}/close`, label)}
</details>` : ''}
</td></tr>`;
}

export function createForm(csrf: string, splitsUsage: boolean, today: string, state?: FormState): Html {
  const v = (field: string, fallback = '') => valueOf(state, 'new', field, fallback);
  return html`<form method="post" action="/dashboard/keys">${csrfField(csrf)}
<fieldset><legend>Create API keys</legend>
${refusal(state, 'new', 'error-new')}
<label for="new-count">How many</label><input id="new-count" name="count" type="number" min="1" max="${MAX_COUNT}" value="${v('count', '1')}">
<label for="new-name">Name (several keys are numbered: "lab 1", "lab 2", …)</label><input id="new-name" name="name" maxlength="40" value="${v('name')}">
${splitsUsage ? audienceSelect('new-audience', v('audience', 'student')) : ''}
<label for="new-monthly">Monthly limit (${AMOUNT_HINT})</label><input id="new-monthly" name="monthly_limit_credits" value="${v('monthly_limit_credits')}">
<label for="new-daily">Daily limit (${AMOUNT_HINT})</label><input id="new-daily" name="daily_limit_credits" value="${v('daily_limit_credits')}">
<label for="new-expires">Last day they work (Korean date; blank for never)</label><input id="new-expires" name="expires_on" type="date" min="${today}" value="${v('expires_on')}">
<label for="new-models">${MODELS_LABEL}</label><input id="new-models" name="models" value="${v('models')}">
<p><button type="submit">Create</button></p>
</fieldset></form>`;
}
