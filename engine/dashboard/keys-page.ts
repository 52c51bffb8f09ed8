// /dashboard/keys: the list the key doors give, and the changes they allow (create one or many with
// numbered names, change limits and expiry, close), each through the same keys/manage.ts function the door
// calls, so a raised limit lifts a 429 at once and a closed key is refused at once, in every process.
import type { FastifyInstance } from 'fastify';
import { koreanDate } from '../core/clock.ts';
import { closeApiKey, createKeys, getKey, listKeys, patchKey, walletForKeys } from '../keys/manage.ts';
import type { ApiKeyRecord } from '../keys/records.ts';
import { MAX_COUNT, parseCreate, parseListQuery, parsePatch } from '../keys/validate.ts';
import { closeButton, isConfirmed, sendCloseConfirmation } from './confirm-close.ts';
import { API_KEYS_CREATED_PATH, type NewKeysFlash } from './created-keys-page.ts';
import type { DashboardDeps } from './deps.ts';
import { doorBody, formOf, modelsField, numberOrText } from './form.ts';
import { credits, html, koreanTime, type Html } from './html.ts';
import { csrfField, sendPage } from './layout.ts';
import { ownerActor, sessionOf } from './session-http.ts';

const PAGE_SIZE = 100;

const DONE: Record<string, string> = { changed: 'The key was changed. It holds from the next call.', closed: 'The key was closed. Calls with it are refused from now on.' };

const MODELS_LABEL = 'Models it may call (ids or patterns such as b-*, separated by commas; blank for every model)';

const used = (usedCredits: number, limit: number | null) => html`${credits(usedCredits)}${limit === null ? ' (no limit)' : html` of ${credits(limit)}`}`;

function keyRow(k: ApiKeyRecord, csrf: string, splitsUsage: boolean, today: string): Html {
  const label = k.name ?? k.key_prefix;
  return html`<tr data-key-id="${k.id}">
<td>${k.name ?? html`<em>unnamed</em>`}</td><td><code>${k.key_prefix}</code></td>
${splitsUsage ? html`<td>${k.audience}</td>` : ''}
<td class="num" data-testid="month">${used(k.month_used_credits, k.monthly_limit_credits)}</td>
<td class="num" data-testid="day">${used(k.day_used_credits, k.daily_limit_credits)}</td>
<td>${k.usable_until ?? 'never'}</td><td data-testid="models">${k.models ? k.models.join(', ') : 'all'}</td><td>${koreanTime(k.last_used_at)}</td>
<td>
<details><summary>Change<span class="skip"> ${label}</span></summary>
<form method="post" action="/dashboard/keys/${encodeURIComponent(k.id)}">${csrfField(csrf)}
<label for="name-${k.id}">Name</label><input id="name-${k.id}" name="name" maxlength="40" value="${k.name ?? ''}">
${splitsUsage ? audienceSelect(`aud-${k.id}`, k.audience) : ''}
<label for="monthly-${k.id}">Monthly limit (credits; blank for none)</label><input id="monthly-${k.id}" name="monthly_limit_credits" inputmode="numeric" value="${k.monthly_limit_credits ?? ''}">
<label for="daily-${k.id}">Daily limit (credits; blank for none)</label><input id="daily-${k.id}" name="daily_limit_credits" inputmode="numeric" value="${k.daily_limit_credits ?? ''}">
<label for="expires-${k.id}">Last day it works (Korean date; blank for never)</label><input id="expires-${k.id}" name="expires_on" type="date" min="${today}" value="${k.usable_until ?? ''}">
<label for="models-${k.id}">${MODELS_LABEL}</label><input id="models-${k.id}" name="models" value="${k.models?.join(', ') ?? ''}">
<p><button type="submit">Save changes to ${label}</button></p>
</form>
${closeButton(`/dashboard/keys/${encodeURIComponent(k.id)}/close`, label)}
</details>
</td></tr>`;
}

function audienceSelect(id: string, current: string | null): Html {
  const opt = (v: string) => html`<option value="${v}"${current === v ? html` selected` : ''}>${v}</option>`;
  return html`<label for="${id}">Audience</label><select id="${id}" name="audience">${opt('student')}${opt('teacher')}</select>`;
}

function createForm(csrf: string, splitsUsage: boolean, today: string): Html {
  return html`<form method="post" action="/dashboard/keys">${csrfField(csrf)}
<fieldset><legend>Create API keys</legend>
<label for="new-count">How many</label><input id="new-count" name="count" type="number" min="1" max="${MAX_COUNT}" value="1">
<label for="new-name">Name (several keys are numbered: "lab 1", "lab 2", …)</label><input id="new-name" name="name" maxlength="40">
${splitsUsage ? audienceSelect('new-audience', 'student') : ''}
<label for="new-monthly">Monthly limit (credits; blank for none)</label><input id="new-monthly" name="monthly_limit_credits" inputmode="numeric">
<label for="new-daily">Daily limit (credits; blank for none)</label><input id="new-daily" name="daily_limit_credits" inputmode="numeric">
<label for="new-expires">Last day they work (Korean date; blank for never)</label><input id="new-expires" name="expires_on" type="date" min="${today}">
<label for="new-models">${MODELS_LABEL}</label><input id="new-models" name="models">
<p><button type="submit">Create</button></p>
</fieldset></form>`;
}

export function registerKeysPage(scope: FastifyInstance, deps: DashboardDeps, flash: NewKeysFlash): void {
  scope.get('/dashboard/keys', async (req, reply) => {
    const s = sessionOf(req);
    const { offset } = parseListQuery(req.query);
    const today = koreanDate(deps.clock.now());
    const wallet = await walletForKeys(deps.db, s.walletId);
    const { data, total } = await listKeys(deps, s.walletId, { limit: PAGE_SIZE, offset });
    const done = DONE[String((req.query as Record<string, unknown>).done ?? '')];
    const more = offset + data.length < total;
    return sendPage(reply, 200, {
      title: 'API keys',
      signedIn: { section: 'keys', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${done ? html`<p class="ok" role="status">${done}</p>` : ''}
<p>${total} active of ${wallet.keySlots} key slots. Use is counted in whole credits on Korean days and months.</p>
${createForm(s.csrfToken, wallet.splitsUsage, today)}
<table>
<caption>Active API keys, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Key</th>${wallet.splitsUsage ? html`<th scope="col">Audience</th>` : ''}<th scope="col" class="num">Used this month</th><th scope="col" class="num">Used today</th><th scope="col">Works until</th><th scope="col">Models</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead>
<tbody>${data.map((k) => keyRow(k, s.csrfToken, wallet.splitsUsage, today))}</tbody>
</table>
<nav aria-label="Pages">${offset > 0 ? html`<a href="/dashboard/keys?offset=${Math.max(0, offset - PAGE_SIZE)}">Newer keys</a> ` : ''}${
        more ? html`<a href="/dashboard/keys?offset=${offset + PAGE_SIZE}">Older keys</a>` : ''
      }</nav>`,
    });
  });

  scope.post('/dashboard/keys', async (req, reply) => {
    const s = sessionOf(req);
    const form = formOf(req.body);
    const count = form.count?.trim() ? numberOrText(form.count) : 1;
    // One key takes the name as is; several take it as the prefix of their numbered names (as on the door).
    const nameField = count === 1 ? 'name' : 'name_prefix';
    const body: Record<string, unknown> = {
      ...doorBody(form, { text: ['audience', 'expires_on'], numbers: ['monthly_limit_credits', 'daily_limit_credits'] }, 'omit'),
      count,
      ...modelsField(form, 'omit'),
      ...(form.name?.trim() ? { [nameField]: form.name } : {}),
    };
    const made = await createKeys(deps, s.walletId, parseCreate(body, koreanDate(deps.clock.now())), ownerActor(req));
    await flash.apiKeys(req, made);
    return reply.code(303).header('location', API_KEYS_CREATED_PATH).send();
  });

  scope.post<{ Params: { id: string } }>('/dashboard/keys/:id', async (req, reply) => {
    const s = sessionOf(req);
    const form = formOf(req.body);
    const body = {
      ...doorBody(form, { text: ['name', 'audience', 'expires_on'], numbers: ['monthly_limit_credits', 'daily_limit_credits'] }, 'null'),
      ...modelsField(form, 'null'),
    };
    await patchKey(deps, s.walletId, req.params.id, parsePatch(body, koreanDate(deps.clock.now())), ownerActor(req));
    return reply.code(303).header('location', '/dashboard/keys?done=changed').send();
  });

  scope.get<{ Params: { id: string } }>('/dashboard/keys/:id/close', async (req, reply) => {
    const s = sessionOf(req);
    const k = await getKey(deps, s.walletId, req.params.id);
    const path = `/dashboard/keys/${encodeURIComponent(k.id)}/close`;
    return sendCloseConfirmation(reply, s, {
      section: 'keys',
      kindText: 'API key',
      label: k.name ?? k.key_prefix,
      consequence: 'every call with it is refused from then on.',
      closePath: path,
      backPath: '/dashboard/keys',
    });
  });

  scope.post<{ Params: { id: string } }>('/dashboard/keys/:id/close', async (req, reply) => {
    const s = sessionOf(req);
    if (!isConfirmed(formOf(req.body))) return reply.code(303).header('location', `/dashboard/keys/${encodeURIComponent(req.params.id)}/close`).send();
    await closeApiKey(deps, s.walletId, req.params.id, ownerActor(req));
    return reply.code(303).header('location', '/dashboard/keys?done=closed').send();
  });
}
