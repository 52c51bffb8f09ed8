// The pages that show new keys once: the create forms POST, leave the new keys in the session's flash
// (flash.ts) and redirect here, so refreshing this page shows "already shown" and never makes more keys.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiKeyRecord } from '../keys/records.ts';
import type { DashboardDeps } from './deps.ts';
import { createFlashStore, type FlashStore } from './flash.ts';
import { type Html, html } from './html.ts';
import { type Ui, uiFor } from './i18n.ts';
import { sendPage } from './layout.ts';
import { sessionOf, sessionSecretOf } from './session-http.ts';

export const API_KEYS_CREATED_PATH = '/dashboard/keys/created';
export const MANAGEMENT_KEY_CREATED_PATH = '/dashboard/management-keys/created';

interface NewApiKeys {
  kind: 'api-keys';
  keys: { id: string; name: string | null; prefix: string; key: string }[];
}
interface NewManagementKey {
  kind: 'management-key';
  id: string;
  key: string;
}
type NewKeys = NewApiKeys | NewManagementKey;

export const managementKeyWarning = (ui: Ui): Html => html`<p class="notice" role="note">${ui.th('mk.warning')}</p>`;

/** The one place the dashboard keeps new secrets between the POST and the page that shows them. */
export class NewKeysFlash {
  private readonly store: FlashStore;
  constructor(deps: DashboardDeps) {
    this.store = createFlashStore(deps.db, deps.clock);
  }
  apiKeys(req: FastifyRequest, made: ApiKeyRecord[]): Promise<void> {
    const keys = made.map((k) => ({ id: k.id, name: k.name, prefix: k.key_prefix, key: k.key ?? '' }));
    return this.put(req, { kind: 'api-keys', keys });
  }
  managementKey(req: FastifyRequest, made: { id: string; key: string }): Promise<void> {
    return this.put(req, { kind: 'management-key', id: made.id, key: made.key });
  }
  private async put(req: FastifyRequest, note: NewKeys): Promise<void> {
    const secret = sessionSecretOf(req);
    if (secret) await this.store.put(secret, note);
  }
  async take<K extends NewKeys['kind']>(req: FastifyRequest, kind: K): Promise<Extract<NewKeys, { kind: K }> | null> {
    const secret = sessionSecretOf(req);
    const note = secret ? ((await this.store.take(secret)) as NewKeys | null) : null;
    return note?.kind === kind ? (note as Extract<NewKeys, { kind: K }>) : null;
  }
}

const alreadyShown = (ui: Ui) => html`<p role="status">${ui.t('created.already')}</p>`;

function apiKeysBody(ui: Ui, note: NewApiKeys): Html {
  const { t } = ui;
  return html`<p class="notice" role="alert">${t(note.keys.length === 1 ? 'created.copy_one' : 'created.copy_many')}</p>
<div class="scroll"><table><caption>${t('created.caption')}</caption><thead><tr><th scope="col">${t('col.name')}</th><th scope="col">${t('col.key')}</th><th scope="col"><span class="skip">${t('created.copy')}</span></th></tr></thead>
<tbody>${note.keys.map(
    (
      k,
      i,
    ) => html`<tr data-key-id="${k.id}"><td>${k.name ?? html`<em>${t('unnamed')}</em>`}</td><td><code class="secret" id="new-key-${i}">${k.key}</code></td>
<td><button type="button" data-copy="new-key-${i}" hidden>${t('created.copy')}<span class="skip"> ${t('created.copy_key', { name: k.name ?? k.prefix })}</span></button></td></tr>`,
  )}</tbody></table></div>`;
}

export function registerCreatedKeysPages(scope: FastifyInstance, flash: NewKeysFlash): void {
  scope.get(API_KEYS_CREATED_PATH, async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const note = await flash.take(req, 'api-keys');
    const n = note?.keys.length ?? 0;
    return sendPage(reply, 200, {
      title: !note ? t('created.title_already') : n === 1 ? t('created.title_one') : t('created.title_many', { n: ui.int(n) }),
      signedIn: { section: 'keys', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${note ? apiKeysBody(ui, note) : alreadyShown(ui)}
<p><a href="/dashboard/keys">${t('created.back')}</a></p>`,
    });
  });

  scope.get(MANAGEMENT_KEY_CREATED_PATH, async (req, reply) => {
    const s = sessionOf(req);
    const ui = uiFor(req);
    const { t } = ui;
    const note = await flash.take(req, 'management-key');
    return sendPage(reply, 200, {
      title: note ? t('created.mk_title') : t('created.mk_title_already'),
      signedIn: { section: 'management-keys', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${
        note
          ? html`<p class="notice" role="alert">${t('created.mk_copy')}</p>
${managementKeyWarning(ui)}
<p><code class="secret" id="new-management-key" data-key-id="${note.id}">${note.key}</code>
<button type="button" data-copy="new-management-key" hidden>${t('created.copy')}</button></p>`
          : alreadyShown(ui)
      }
<p><a href="/dashboard/management-keys">${t('created.mk_back')}</a></p>`,
    });
  });
}
