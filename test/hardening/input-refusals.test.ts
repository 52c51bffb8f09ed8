// Input PostgreSQL refuses (a NUL byte in text) is the client's mistake: 400 in the door's shape, never the
// 503 of a fault on our side, and nothing charged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { journalSum } from '../helpers/ledger.ts';

let t: TestGateway;
let managementKey: string;
beforeAll(async () => {
  t = await startTestGateway();
  managementKey = (await t.gw.keys.createManagementKey(t.walletId, 'ops')).key;
});
afterAll(() => t.close());

const NUL = '\u0000';
const ADMIN = { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' };

function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  return fetch(`${t.url}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body) });
}

async function expect400(res: Response) {
  const text = await res.text();
  expect(res.status, text).toBe(400);
  expect(JSON.parse(text).error.type).toBe('invalid_request_error');
}

describe('NUL bytes and other text PostgreSQL refuses', () => {
  const api = () => ({ authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' });
  const mgmt = () => ({ authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' });

  it('key ids in the path of the key doors', async () => {
    await expect400(await call('GET', '/v1/keys/k%00x', mgmt()));
    await expect400(await call('PATCH', '/v1/keys/k%00x', mgmt(), { name: 'x' }));
    await expect400(await call('DELETE', '/v1/keys/k%00x', mgmt()));
  });

  it('text with an unpaired surrogate, which would be stored as U+FFFD: key names, owner ids, management key names', async () => {
    const lone = 'x\ud800y';
    await expect400(await call('POST', '/v1/keys', mgmt(), { name: lone }));
    await expect400(await call('POST', '/v1/keys', mgmt(), { count: 2, name_prefix: lone }));
    await expect400(await call('POST', '/admin/v1/wallets', ADMIN, { owner_id: lone }));
    await expect400(await call('POST', `/admin/v1/wallets/${t.walletId}/owner`, ADMIN, { owner_id: lone }));
    await expect400(await call('POST', `/admin/v1/wallets/${t.walletId}/management-keys`, ADMIN, { name: lone }));
    // A pair is text: an emoji in a name is kept as sent.
    const ok = await call('POST', `/admin/v1/wallets/${t.walletId}/management-keys`, ADMIN, { name: 'class 🦊' });
    expect(ok.status).toBe(201);
    expect((await ok.json()).name).toBe('class 🦊');
  });

  it('key names', async () => {
    await expect400(await call('POST', '/v1/keys', mgmt(), { name: `a${NUL}b` }));
    await expect400(await call('POST', '/v1/keys', mgmt(), { count: 2, name_prefix: `a${NUL}` }));
  });

  it('video ids and cursors', async () => {
    await expect400(await call('GET', '/v1/videos/v%00x', api()));
    await expect400(await call('GET', '/v1/videos/v%00x/content', api()));
    await expect400(await call('DELETE', '/v1/videos/v%00x', api()));
    await expect400(await call('GET', '/v1/videos?after=v%00x', api()));
  });

  it('video prompts, charging nothing', async () => {
    const before = await t.balance();
    await expect400(await call('POST', '/v1/videos', api(), { model: 'video-d-2', prompt: `a cat${NUL}` }));
    await expect400(await call('POST', '/v1/videos', api(), { model: 'video-d-1', prompt: 'x\udfffy' })); // found by fuzz-hostile
    expect(await t.balance()).toBe(before);
  });

  it('admin wallet ids, owner ids and management key names', async () => {
    await expect400(await call('GET', '/admin/v1/wallets/w%00x', ADMIN));
    await expect400(await call('POST', '/admin/v1/wallets/w%00x/credits', ADMIN, { credits: 1 }));
    await expect400(await call('POST', '/admin/v1/wallets/w%00x/management-keys', ADMIN, {}));
    await expect400(await call('POST', '/admin/v1/wallets', ADMIN, { owner_id: `o${NUL}` }));
    await expect400(await call('POST', `/admin/v1/wallets/${t.walletId}/owner`, ADMIN, { owner_id: `o${NUL}` }));
    await expect400(await call('POST', `/admin/v1/wallets/${t.walletId}/management-keys`, ADMIN, { name: `n${NUL}` }));
  });
});

describe('the reserved team-chat key name prefix', () => {
  const mgmt = () => ({ authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' });
  it('is refused behind leading spaces, on create and on rename', async () => {
    for (const name of ['  채팅 · 민수', '\u00a0채팅 · 민수', '\t채팅 · 민수']) {
      await expect400(await call('POST', '/v1/keys', mgmt(), { name }));
      await expect400(await call('POST', '/v1/keys', mgmt(), { count: 2, name_prefix: name.slice(0, 8) }));
    }
    const made = await call('POST', '/v1/keys', mgmt(), { name: 'plain' });
    expect(made.status).toBe(201);
    const id = (await made.json()).data[0].id;
    await expect400(await call('PATCH', `/v1/keys/${id}`, mgmt(), { name: ' 채팅 · 민수' }));
  });
});

// The other data exceptions (SQLSTATE class 22) that admin or key-door input can reach. Probed: key limits
// up to 2^53−1, expires_on 9999-12-31, offsets up to 2^53−1 and max_tokens 1e300 are stored or refused
// before the database; a top-up that takes a wallet past int8 (22003) and a wallet cursor in year 0 (22008)
// reached it and answered 503.
describe('data exceptions PostgreSQL raises on client input', () => {
  it('a top-up past the largest balance is 400 naming credits, and moves nothing (22003)', async () => {
    const w = await t.gw.ledger.createWallet({});
    await t.gw.ledger.topUp(w.id, { nano: 9_223_372_036_854_000_000n });
    const before = await t.gw.ledger.balance(w.id);
    const res = await call('POST', `/admin/v1/wallets/${w.id}/credits`, ADMIN, { credits: 1_000_000 });
    const text = await res.text();
    expect(res.status, text).toBe(400);
    expect(JSON.parse(text).error).toMatchObject({ type: 'invalid_request_error', param: 'credits' });
    const after = await t.gw.ledger.balance(w.id);
    expect(after.availableNano).toBe(before.availableNano);
    expect(after.lots).toHaveLength(before.lots.length);
    expect((await journalSum(t.gw.db, w.id)).availableNano).toBe(after.availableNano);
    // A top-up that still fits goes through.
    expect((await call('POST', `/admin/v1/wallets/${w.id}/credits`, ADMIN, { credits: 1 })).status).toBe(201);
  });

  it("a path that does not decode is 400 in the chat shape, not Fastify's own", async () => {
    for (const path of ['/admin/v1/wallets/%FF%FE', '/admin/v1/wallets/%ED%A0%80/management-keys', '/v1/keys/%FF']) {
      await expect400(await call('GET', path, path.startsWith('/v1') ? { authorization: `Bearer ${managementKey}` } : ADMIN));
    }
  });

  it('a wallet cursor whose instant PostgreSQL cannot hold is 400 naming cursor (22008)', async () => {
    const cursor = Buffer.from(JSON.stringify(['0000-01-01T00:00:00.000000Z', 'wal_x'])).toString('base64url');
    const res = await call('GET', `/admin/v1/wallets?cursor=${cursor}`, ADMIN);
    await expect400(res.clone());
    expect((await res.json()).error.param).toBe('cursor');
  });
});
