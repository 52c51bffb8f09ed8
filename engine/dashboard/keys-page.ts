// /dashboard/keys: the list the key doors give, and the changes they allow (create one or many with
// numbered names, change limits and expiry, close), each through the same keys/manage.ts function the door
// calls, so a raised limit lifts a 429 at once and a closed key is refused at once, in every process.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { koreanDate } from '../core/clock.ts';
import { closeApiKey, createKeys, getKey, listKeys, patchKey, walletForKeys } from '../keys/manage.ts';
import { fromThrown } from '../http/reply-error.ts';
import { parseCreate, parseListQuery, parsePatch } from '../keys/validate.ts';
import { isConfirmed, sendCloseConfirmation } from './confirm-close.ts';
import { API_KEYS_CREATED_PATH, type NewKeysFlash } from './created-keys-page.ts';
import type { DashboardDeps } from './deps.ts';
import { doorBody, formOf, modelsField, numberOrText } from './form.ts';
import { inWords } from './form-errors.ts';
import { html } from './html.ts';
import { createForm, keyRow, type FormState } from './keys-forms.ts';
import { sendPage } from './layout.ts';
import { sessionMay } from './roles.ts';
import { ownerActor, sessionOf } from './session-http.ts';

const PAGE_SIZE = 100;

const AMOUNT_FIELDS = { monthly_limit_credits: 'Monthly limit', daily_limit_credits: 'Daily limit' };

const DONE: Record<string, string> = { changed: 'The key was changed. It holds from the next call.', closed: 'The key was closed. Calls with it are refused from now on.' };

export function registerKeysPage(scope: FastifyInstance, deps: DashboardDeps, flash: NewKeysFlash): void {
  /** The page, also answered (400) by a refused form, which comes back filled in with the reason. */
  async function sendKeysPage(req: FastifyRequest, reply: FastifyReply, status: number, state?: FormState) {
    const s = sessionOf(req);
    const { offset } = parseListQuery(req.query);
    const today = koreanDate(deps.clock.now());
    const wallet = await walletForKeys(deps.db, s.walletId);
    const { data, total } = await listKeys(deps, s.walletId, { limit: PAGE_SIZE, offset });
    const done = state ? undefined : DONE[String((req.query as Record<string, unknown>).done ?? '')];
    const more = offset + data.length < total;
    // A viewer reads: no create form, no change or close buttons (roles.ts refuses them anyway).
    const canChange = sessionMay(req, 'keys');
    return sendPage(reply, status, {
      title: 'API keys',
      signedIn: { section: 'keys', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${done ? html`<p class="ok" role="status">${done}</p>` : ''}
<p>${total} active of ${wallet.keySlots} key slots. Use is counted in whole credits (1,000,000 credits = $1) on Korean days and months.</p>
${canChange ? createForm(s.csrfToken, wallet.splitsUsage, today, state) : ''}
${
  total === 0
    ? html`<p data-testid="empty">No API keys yet. Create one with the form above: it is shown once, so copy it into your program or give it to a class.</p>`
    : html`<div class="scroll"><table>
<caption>Active API keys, newest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Key</th>${wallet.splitsUsage ? html`<th scope="col">Audience</th>` : ''}<th scope="col" class="num">Used this month</th><th scope="col" class="num">Used today</th><th scope="col">Works until</th><th scope="col">Models</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead>
<tbody>${data.map((k) => keyRow(k, s.csrfToken, wallet.splitsUsage, today, state, canChange))}</tbody>
</table></div>`
}
<nav aria-label="Pages">${offset > 0 ? html`<a href="/dashboard/keys?offset=${Math.max(0, offset - PAGE_SIZE)}">Newer keys</a> ` : ''}${
        more ? html`<a href="/dashboard/keys?offset=${offset + PAGE_SIZE}">Older keys</a>` : ''
      }</nav>`,
    });
  }

  /** Runs a form's change; a 400 answers the page with the form as typed and the reason in words. */
  async function orRefusedForm(req: FastifyRequest, reply: FastifyReply, target: string, change: () => Promise<FastifyReply>) {
    try {
      return await change();
    } catch (err) {
      const e = fromThrown(err);
      if (e.status !== 400) throw err;
      return sendKeysPage(req, reply, 400, { target, values: formOf(req.body), message: inWords(e) });
    }
  }

  scope.get('/dashboard/keys', (req, reply) => sendKeysPage(req, reply, 200));

  scope.post('/dashboard/keys', (req, reply) => orRefusedForm(req, reply, 'new', async () => {
    const s = sessionOf(req);
    const form = formOf(req.body);
    const count = form.count?.trim() ? numberOrText(form.count) : 1;
    // One key takes the name as is; several take it as the prefix of their numbered names (as on the door).
    const nameField = count === 1 ? 'name' : 'name_prefix';
    const body: Record<string, unknown> = {
      ...doorBody(form, { text: ['audience', 'expires_on'], amounts: AMOUNT_FIELDS }, 'omit'),
      count,
      ...modelsField(form, 'omit'),
      ...(form.name?.trim() ? { [nameField]: form.name } : {}),
    };
    const made = await createKeys(deps, s.walletId, parseCreate(body, koreanDate(deps.clock.now())), ownerActor(req));
    await flash.apiKeys(req, made);
    return reply.code(303).header('location', API_KEYS_CREATED_PATH).send();
  }));

  scope.post<{ Params: { id: string } }>('/dashboard/keys/:id', (req, reply) => orRefusedForm(req, reply, req.params.id, async () => {
    const s = sessionOf(req);
    const form = formOf(req.body);
    const body = {
      ...doorBody(form, { text: ['name', 'audience', 'expires_on'], amounts: AMOUNT_FIELDS }, 'null'),
      ...modelsField(form, 'null'),
    };
    await patchKey(deps, s.walletId, req.params.id, parsePatch(body, koreanDate(deps.clock.now())), ownerActor(req));
    return reply.code(303).header('location', '/dashboard/keys?done=changed').send();
  }));

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
