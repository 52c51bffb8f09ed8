// A body nested thousands of levels deep overflowed a recursive walk after the hold was taken: a 503, and the
// hold left for the sweeper, freezing the wallet for every key on it. JSON depth is now bounded
// (limits.json_max_depth) before anything is held, on every door that reads JSON; and whatever fails after a
// hold was taken releases it at once.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { UpstreamClient } from '../../engine/calls/upstream.ts';
import { PNG_1X1_BASE64 } from '../../simulator/media.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { A_VERSION, expectInvalid, post, sleep } from './e2e.ts';

/** Makes the next multipart body built for a vendor throw, as any fault in building an upstream body would. */
const breakNextUpstreamForm = vi.hoisted(() => ({ armed: false }));
vi.mock(import('../../engine/http/multipart.ts'), async (original) => {
  const real = await original();
  return {
    ...real,
    encodeMultipart: (...args: Parameters<typeof real.encodeMultipart>) => {
      if (breakNextUpstreamForm.armed) {
        breakNextUpstreamForm.armed = false;
        throw new RangeError('Maximum call stack size exceeded');
      }
      return real.encodeMultipart(...args);
    },
  };
});

const LIMIT = 64; // config/limits.yaml json_max_depth

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

/** A value whose deepest path holds `levels` objects: `{"a":{"a":…"x"…}}`. */
function nested(levels: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

const held = async () => await t.held();

/** Sends the call and asserts: nothing held at any moment after, balance unchanged, no vendor asked. */
async function expectNothingMoved(send: () => Promise<Response>): Promise<Response> {
  const before = await t.balance();
  const sent = t.sim.received.length;
  const res = await send();
  expect(await held()).toBe(0n);
  expect(await t.balance()).toBe(before);
  expect(t.sim.received.length, 'a vendor was called').toBe(sent);
  return res;
}

async function expectDepthRefused(res: Response, shape: 'chat' | 'messages' = 'chat') {
  const body = await expectInvalid(res, shape);
  expect(body.error.message).toContain(String(LIMIT));
}

describe('a body nested 2,500 levels deep is refused with 400 before anything is held', () => {
  const deep = nested(2500);
  const doors: [string, string, Record<string, unknown>, Record<string, string>, 'chat' | 'messages'][] = [
    ['chat', '/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: 'hi' }] }, {}, 'chat'],
    [
      'messages',
      '/v1/messages',
      { model: 'a-top-5.5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] },
      A_VERSION,
      'messages',
    ],
    ['responses', '/v1/responses', { model: 'b-5', input: 'hi' }, {}, 'chat'],
    ['embeddings', '/v1/embeddings', { model: 'embedding-c-2', input: 'hi' }, {}, 'chat'],
    ['video create', '/v1/videos', { model: 'video-d-1', prompt: 'a cat' }, {}, 'chat'],
  ];
  for (const [name, path, body, headers, shape] of doors) {
    it(`${name}: deep metadata`, async () => {
      const res = await expectNothingMoved(() => post(t, path, { ...body, metadata: deep }, headers));
      await expectDepthRefused(res, shape);
    });
  }

  it('a deep array is refused like a deep object', async () => {
    let v: unknown = 1;
    for (let i = 0; i < 2500; i++) v = [v];
    const res = await expectNothingMoved(() =>
      post(t, '/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: 'hi' }], metadata: v }),
    );
    await expectDepthRefused(res);
  });

  it('a form value sent as a JSON part (video create multipart) is bounded too', async () => {
    const boundary = 'deepform';
    const part = (name: string, type: string | null, value: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n${value}\r\n`;
    const form =
      part('model', null, 'video-d-1') +
      part('prompt', null, 'a cat') +
      part('metadata', 'application/json', JSON.stringify(deep)) +
      `--${boundary}--\r\n`;
    const res = await expectNothingMoved(() =>
      fetch(`${t.url}/v1/videos`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: form,
      }),
    );
    await expectDepthRefused(res);
  });

  it('the key doors refuse it (a management key creating keys)', async () => {
    const admin = { authorization: 'Bearer test-admin-token' };
    const made = await post(t, `/admin/v1/wallets/${t.walletId}/management-keys`, { name: 'deep' }, admin);
    expect(made.status).toBe(201);
    const { key } = (await made.json()) as { key: string };
    const res = await post({ ...t, apiKey: key }, '/v1/keys', { name: 'k', metadata: deep });
    await expectDepthRefused(res);
  });

  it('the admin API refuses it', async () => {
    const res = await post(t, '/admin/v1/wallets', { credits: 1, metadata: deep }, { authorization: 'Bearer test-admin-token' });
    await expectDepthRefused(res);
  });
});

describe('the depth limit itself', () => {
  // The body object is the first level, metadata the second.
  it(`a body exactly ${LIMIT} levels deep is served; one level more is refused`, async () => {
    const base = { model: 'b-5', messages: [{ role: 'user', content: 'hi [[sim:usage input=10 output=5]]' }] };
    const ok = await post(t, '/v1/chat/completions', { ...base, metadata: nested(LIMIT - 1) });
    expect(ok.status, await ok.clone().text()).toBe(200);
    await ok.json();
    const refused = await expectNothingMoved(() => post(t, '/v1/chat/completions', { ...base, metadata: nested(LIMIT) }));
    await expectDepthRefused(refused);
  });
});

describe('a failure after the hold was taken releases it at once', () => {
  it('building the vendor body throws (image edit): 5xx in the door shape, nothing held, nothing charged', async () => {
    const before = await t.balance();
    const fd = new FormData();
    fd.append('model', 'image-b-1');
    fd.append('prompt', 'add a hat');
    fd.append('image', new Blob([new Uint8Array(Buffer.from(PNG_1X1_BASE64, 'base64'))], { type: 'image/png' }), 'in.png');
    breakNextUpstreamForm.armed = true;
    const res = await fetch(`${t.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: fd });
    expect(breakNextUpstreamForm.armed, 'the vendor body was never built').toBe(false);
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(((await res.json()) as any).error.type).toMatch(/upstream_error|api_error/);
    expect(await held()).toBe(0n);
    expect(await t.balance()).toBe(before);
  });

  it('the upstream client throws synchronously: 5xx, nothing held, nothing charged', async () => {
    const before = await t.balance();
    const spy = vi.spyOn(UpstreamClient.prototype, 'send').mockImplementation(() => {
      throw new TypeError('broken client');
    });
    try {
      const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: 'hi' }] });
      expect(res.status).toBeGreaterThanOrEqual(500);
      await res.text();
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
    expect(await held()).toBe(0n);
    expect(await t.balance()).toBe(before);
    await sleep(50);
    await expectJournalAddsUp(t.gw.db, t.walletId);
  });
});
