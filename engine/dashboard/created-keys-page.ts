// The pages that show new keys once: the create forms POST, leave the new keys in the session's flash
// (flash.ts) and redirect here, so refreshing this page shows "already shown" and never makes more keys.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiKeyRecord } from '../keys/records.ts';
import type { DashboardDeps } from './deps.ts';
import { createFlashStore, type FlashStore } from './flash.ts';
import { html, type Html } from './html.ts';
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

export const MANAGEMENT_KEY_WARNING = html`<p class="notice" role="note"><strong>Never put a management key in client code</strong> (a web page, a
mobile or desktop app, a repository): whoever holds it can create, change and close every API key of this wallet.
Keep it on a server you control, and close it here when you no longer need it.</p>`;

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

const ALREADY_SHOWN = html`<p role="status">New keys are shown once, right after they are made, and these were shown already (or
the page was left open for more than five minutes). Nothing was created again. If a key was not copied, close it
and create a new one.</p>`;

function apiKeysBody(note: NewApiKeys): Html {
  return html`<p class="notice" role="alert">Copy ${note.keys.length === 1 ? 'the key' : 'the keys'} now: this page is the only time the full key is shown.</p>
<div class="scroll"><table><caption>New keys</caption><thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col"><span class="skip">Copy</span></th></tr></thead>
<tbody>${note.keys.map(
    (k, i) => html`<tr data-key-id="${k.id}"><td>${k.name ?? html`<em>unnamed</em>`}</td><td><code class="secret" id="new-key-${i}">${k.key}</code></td>
<td><button type="button" data-copy="new-key-${i}" hidden>Copy<span class="skip"> key ${k.name ?? k.prefix}</span></button></td></tr>`,
  )}</tbody></table></div>`;
}

export function registerCreatedKeysPages(scope: FastifyInstance, flash: NewKeysFlash): void {
  scope.get(API_KEYS_CREATED_PATH, async (req, reply) => {
    const s = sessionOf(req);
    const note = await flash.take(req, 'api-keys');
    const n = note?.keys.length ?? 0;
    return sendPage(reply, 200, {
      title: !note ? 'Keys already shown' : n === 1 ? 'Key created' : `${n} keys created`,
      signedIn: { section: 'keys', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${note ? apiKeysBody(note) : ALREADY_SHOWN}
<p><a href="/dashboard/keys">Back to the keys</a></p>`,
    });
  });

  scope.get(MANAGEMENT_KEY_CREATED_PATH, async (req, reply) => {
    const s = sessionOf(req);
    const note = await flash.take(req, 'management-key');
    return sendPage(reply, 200, {
      title: note ? 'Management key created' : 'Key already shown',
      signedIn: { section: 'management-keys', csrfToken: s.csrfToken, walletId: s.walletId },
      body: html`${
        note
          ? html`<p class="notice" role="alert">Copy the key now: this page is the only time it is shown.</p>
${MANAGEMENT_KEY_WARNING}
<p><code class="secret" id="new-management-key" data-key-id="${note.id}">${note.key}</code>
<button type="button" data-copy="new-management-key" hidden>Copy</button></p>`
          : ALREADY_SHOWN
      }
<p><a href="/dashboard/management-keys">Back to management keys</a></p>`,
    });
  });
}
