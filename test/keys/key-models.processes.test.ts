// Models per key across two gateway processes on one PostgreSQL: a key's list, set and changed through one
// process's key doors, is what the other process enforces on every model door (403 permission_error naming
// the list, nothing held) and lists in GET /v1/models; the key record and the model list agree.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { listAllows } from '../../engine/core/model-list.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { PNG_1X1_BASE64 } from '../../simulator/media.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const ADMIN = 'models-admin-token';
const LIST = ['b-5-*', 'a-small-*', 'text-embedding-3-small', 'image-d-1', 'image-b-2', 'tts-1', 'omni-moderation-latest', 'video-d-1'];

/** Each door with a model the list allows and one it does not. */
const DOORS = [
  {
    path: '/v1/chat/completions',
    allowed: 'b-5-mini',
    refused: 'b-6',
    body: { messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 16 },
  },
  {
    path: '/v1/messages',
    allowed: 'a-small-4.5',
    refused: 'a-top-5.5',
    body: { max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
    shape: 'messages',
  },
  { path: '/v1/responses', allowed: 'b-5-nano', refused: 'b-pro-5', body: { input: 'hi', max_output_tokens: 16 } },
  { path: '/v1/embeddings', allowed: 'text-embedding-3-small', refused: 'text-embedding-3-large', body: { input: 'hi' } },
  { path: '/v1/images/generations', allowed: 'image-d-1', refused: 'image-b-1', body: { prompt: 'a cat' } },
  { path: '/v1/audio/speech', allowed: 'tts-1', refused: 'tts-1-hd', body: { input: 'hello', voice: 'alloy' } },
  { path: '/v1/moderations', allowed: 'omni-moderation-latest', refused: 'omni-moderation-2024-09-26', body: { input: 'hi' } },
  { path: '/v1/videos', allowed: 'video-d-1', refused: 'video-d-2', body: { prompt: 'a cat', seconds: '4' } },
] as const;

let pgSchema: TestPostgres;
let sim: Simulator;
let a: ChildGateway;
let b: ChildGateway;
let walletId: string;
let managementKey: string;
let plainKey: string;

function gateway(apiKey: string): Promise<ChildGateway> {
  const env: Record<string, string> = { DATABASE_URL: pgSchema.url, GATEWAY_SIMULATE: '0', LOG_LEVEL: 'warn', GATEWAY_ADMIN_TOKEN: ADMIN };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  return startChildGateway(env, { apiKey });
}

const headers = (key: string) => ({
  authorization: `Bearer ${key}`,
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
});
const send = (g: ChildGateway, method: string, path: string, key: string, body?: unknown) =>
  fetch(`${g.base}${path}`, { method, headers: headers(key), body: body === undefined ? null : JSON.stringify(body) });
const call = (g: ChildGateway, key: string, door: (typeof DOORS)[number], model: string) =>
  send(g, 'POST', door.path, key, { model, ...door.body });
const walletCredits = async (g: ChildGateway) =>
  ((await (await fetch(`${g.base}/admin/v1/wallets/${walletId}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as any)
    .credits;
const listedIds = async (g: ChildGateway, key: string) =>
  (((await (await send(g, 'GET', '/v1/models', key)).json()) as any).data as { id: string }[]).map((m) => m.id).sort();

beforeAll(async () => {
  if (!canRun) return;
  pgSchema = await openTestPostgres({ migrate: true });
  sim = await startSimulator();
  const ledger = createLedger(pgSchema.db, { clock: systemClock });
  const wallet = await ledger.createWallet({ credits: 50_000_000 });
  walletId = wallet.id;
  const keys = createKeyService(pgSchema.db, { clock: systemClock });
  managementKey = (await keys.createManagementKey(walletId, 'ops')).key;
  plainKey = (await keys.createApiKey(walletId, { name: 'no list' })).key;
  await keys.close();
  [a, b] = await Promise.all([gateway(plainKey), gateway(plainKey)]);
}, 120_000);

afterAll(async () => {
  a?.remove();
  b?.remove();
  await sim?.close();
  await pgSchema?.cleanup();
});

describe.runIf(canRun)('models per key across two processes [postgres]', () => {
  let keyId: string;
  let key: string;

  it('a bad entry in models is a 400 naming models, and no key is made', async () => {
    for (const models of [['b-*x'], ['*b'], 'b-*', [''], [42], ['a b']]) {
      const res = await send(a, 'POST', '/v1/keys', managementKey, { name: 'bad', models });
      const json = (await res.json()) as any;
      expect(res.status, JSON.stringify(models)).toBe(400);
      expect(json.error.param).toBe('models');
    }
    const list = (await (await send(a, 'GET', '/v1/keys', managementKey)).json()) as any;
    expect(list.data.map((k: any) => k.name)).not.toContain('bad');
  });

  it('a key made through one process with a list: the other refuses every other model before any hold', async () => {
    const made = await send(a, 'POST', '/v1/keys', managementKey, { name: 'class', models: LIST });
    expect(made.status).toBe(201);
    const rec = ((await made.json()) as any).data[0];
    expect(rec.models).toEqual(LIST);
    keyId = rec.id;
    key = rec.key;
    const before = await walletCredits(b);
    for (const door of DOORS) {
      const res = await call(b, key, door, door.refused);
      const json = (await res.json()) as any;
      expect(res.status, door.path).toBe(403);
      const error = json.error;
      expect(error.type, door.path).toBe('permission_error');
      expect(error.message, door.path).toContain(LIST.join(', '));
      expect(error.message, door.path).toContain(door.refused);
      if (door.path === '/v1/messages') expect(json.type).toBe('error');
    }
    expect(await walletCredits(b)).toBe(before);
    expect(sim.received.length).toBe(0);
  });

  it('the image edits door (a form) refuses a model off the list and serves one on it', async () => {
    const edit = (model: string) => {
      const fd = new FormData();
      fd.append('model', model);
      fd.append('prompt', 'paint it blue');
      fd.append('image', new Blob([new Uint8Array(Buffer.from(PNG_1X1_BASE64, 'base64'))], { type: 'image/png' }), 'in.png');
      return fetch(`${b.base}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd });
    };
    const before = await walletCredits(b);
    const refused = await edit('image-b-1');
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.type).toBe('permission_error');
    expect(await walletCredits(b)).toBe(before);
    const served = await edit('image-b-2');
    expect(served.status, await served.clone().text()).toBe(200);
  });

  it('the models on its list are served on every door', async () => {
    for (const door of DOORS) {
      const res = await call(b, key, door, door.allowed);
      expect(res.status, `${door.path}: ${await res.clone().text()}`).toBeLessThan(300);
      await res.arrayBuffer();
    }
  });

  it('GET /v1/models lists what the record allows, and only that; a key without a list sees every model', async () => {
    const all = await listedIds(b, plainKey);
    const mine = await listedIds(b, key);
    const record = (await (await send(b, 'GET', `/v1/keys/${keyId}`, managementKey)).json()) as any;
    expect(record.models).toEqual(LIST);
    expect(mine).toEqual(all.filter((id) => listAllows(record.models, id)));
    expect(mine).toContain('b-5-mini');
    expect(mine).not.toContain('b-6');
    expect((await send(b, 'GET', '/v1/models/b-6', key)).status).toBe(404);
    expect((await send(b, 'GET', '/v1/models/b-5-mini', key)).status).toBe(200);
  });

  it('a PATCH of models through one process holds in the other at once, and null gives every model back', async () => {
    const chat = DOORS[0];
    // The other process has the key cached from the calls above.
    expect((await call(b, key, chat, 'b-5-mini')).status).toBe(200);
    const patched = await send(a, 'PATCH', `/v1/keys/${keyId}`, managementKey, { models: ['tts-1'] });
    expect(((await patched.json()) as any).models).toEqual(['tts-1']);
    const refused = await pollStatus(() => call(b, key, chat, 'b-5-mini'), 403);
    expect(refused).toBe(403);
    expect(await listedIds(b, key)).toEqual(['tts-1']);

    const cleared = await send(a, 'PATCH', `/v1/keys/${keyId}`, managementKey, { models: null });
    expect(((await cleared.json()) as any).models).toBeNull();
    expect(await pollStatus(() => call(b, key, chat, 'b-6'), 200)).toBe(200);
    expect(await listedIds(b, key)).toEqual(await listedIds(b, plainKey));
  });
});

/** The status once it is `want`, within two seconds (a notification crosses processes), else the last one. */
async function pollStatus(make: () => Promise<Response>, want: number): Promise<number> {
  let last = 0;
  for (let i = 0; i < 40; i++) {
    const res = await make();
    await res.arrayBuffer();
    last = res.status;
    if (last === want) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  return last;
}
