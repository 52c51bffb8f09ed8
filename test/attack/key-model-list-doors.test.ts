// Attack (wt-attack): a key limited to one model (`b-5`) tries every door with another model, including form
// doors with the model field sent twice (the gateway checking one, the vendor reading the other).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNG_1X1_BASE64 } from '../../simulator/media.ts';
import { A_VERSION, post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
let k: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
  const { key: mk } = await t.gw.keys.createManagementKey(t.walletId, 'mgmt');
  const res = await fetch(`${t.url}/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${mk}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'one-model', models: ['b-5', 'image-b-1', 'video-d-1'] }),
  });
  const made = (await res.json()) as any;
  const key = made.key ?? made.data?.[0]?.key;
  if (!key) throw new Error(`no key: ${JSON.stringify(made)}`);
  k = { ...t, apiKey: key };
});
afterAll(() => t?.close());

async function refused(res: Promise<Response>, statuses = [403]) {
  const sent = t.sim.received.length;
  const before = await t.balance();
  const r = await res;
  const text = await r.text();
  const got = t.sim.received.slice(sent);
  console.log(
    r.status,
    text.slice(0, 200),
    got.map((g) => JSON.stringify(g.body).slice(0, 200)),
  );
  expect(statuses, text).toContain(r.status);
  expect(got.length).toBe(0);
  expect(await t.balance()).toBe(before);
}

const png = () => new Blob([new Uint8Array(Buffer.from(PNG_1X1_BASE64, 'base64'))], { type: 'image/png' });

describe('a key with a model list, at every door', () => {
  it('chat', () =>
    refused(post(k, '/v1/chat/completions', { model: 'b-6', max_completion_tokens: 5, messages: [{ role: 'user', content: 'x' }] })));
  it('responses', () => refused(post(k, '/v1/responses', { model: 'b-pro-5', input: 'x', max_output_tokens: 16 })));
  it('messages', () =>
    refused(post(k, '/v1/messages', { model: 'a-top-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, A_VERSION)));
  it('embeddings', () => refused(post(k, '/v1/embeddings', { model: 'text-embedding-3-large', input: 'x' })));
  it('speech', () => refused(post(k, '/v1/audio/speech', { model: 'tts-1-hd', input: 'x', voice: 'alloy' })));
  it('images', () => refused(post(k, '/v1/images/generations', { model: 'image-b-3', prompt: 'x' })));
  it('videos', () => refused(post(k, '/v1/videos', { model: 'video-d-2', prompt: 'x', seconds: '4', size: '1280x720' })));
  it('videos, multipart', async () => {
    const fd = new FormData();
    fd.append('model', 'video-d-2');
    fd.append('prompt', 'x');
    await refused(fetch(`${t.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${k.apiKey}` }, body: fd }));
  });
  it('image edits: model sent twice, the allowed one first', async () => {
    const fd = new FormData();
    fd.append('model', 'image-b-1');
    fd.append('model', 'image-b-5');
    fd.append('prompt', 'x');
    fd.append('image', png(), 'in.png');
    await refused(
      fetch(`${t.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${k.apiKey}` }, body: fd }),
      [400, 403],
    );
  });
  it('image edits: model sent twice, the allowed one last', async () => {
    const fd = new FormData();
    fd.append('model', 'image-b-5');
    fd.append('model', 'image-b-1');
    fd.append('prompt', 'x');
    fd.append('image', png(), 'in.png');
    await refused(
      fetch(`${t.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${k.apiKey}` }, body: fd }),
      [400, 403],
    );
  });
  it('image edits: quality sent twice (low held, high read)', async () => {
    const fd = new FormData();
    fd.append('model', 'image-b-1');
    fd.append('quality', 'low');
    fd.append('quality', 'high');
    fd.append('prompt', 'x');
    fd.append('image', png(), 'in.png');
    await refused(fetch(`${t.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${k.apiKey}` }, body: fd }), [400]);
  });
  it('videos multipart: seconds sent twice', async () => {
    const fd = new FormData();
    fd.append('model', 'video-d-1');
    fd.append('prompt', 'x');
    fd.append('seconds', '1');
    fd.append('seconds', '15');
    await refused(fetch(`${t.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: fd }), [400]);
  });
  it('moderations with a model (free door)', async () => {
    const r = await post(k, '/v1/moderations', { model: 'omni-moderation-latest', input: 'x' });
    console.log('moderations', r.status, (await r.text()).slice(0, 120));
  });
});

describe('a key limited to a-small-*: model fields inside /v1/messages tools', () => {
  let s: TestGateway;
  beforeAll(async () => {
    const { key: mk } = await t.gw.keys.createManagementKey(t.walletId, 'mgmt2');
    const res = await fetch(`${t.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mk}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'small-only', models: ['a-small-*'] }),
    });
    const made = (await res.json()) as any;
    s = { ...t, apiKey: made.key ?? made.data?.[0]?.key };
  });
  const call = (tools: unknown[]) =>
    post(s, '/v1/messages', { model: 'a-small-4.5', max_tokens: 16, messages: [{ role: 'user', content: 'x' }], tools }, A_VERSION);
  const advisor = (model: unknown, extra: Record<string, unknown> = {}) => ({ type: 'advisor_20260301', name: 'advisor', model, ...extra });
  it('advisor a-top-5', () => refused(call([advisor('a-top-5')])));
  it('second advisor a-top-5 behind an allowed one', () =>
    refused(call([advisor('a-small-4.5'), advisor('a-top-5', { name: 'advisor2' })])));
  it('advisor model in another case', () => refused(call([advisor('A-TOP-5')]), [400, 403, 404]));
  it('advisor model with a trailing space', () => refused(call([advisor('a-top-5 ')]), [400, 403, 404]));
  it('advisor model as a pattern of the list', () => refused(call([advisor('a-small-*')]), [400, 403, 404]));
  it('advisor model as an array', () => refused(call([advisor(['a-top-5'])]), [400, 403]));
  it('advisor model as an object', () => refused(call([advisor({ id: 'a-top-5' })]), [400, 403]));
  it('advisor with Model (capital) beside an allowed model', () =>
    refused(call([advisor('a-small-4.5', { Model: 'a-top-5' })]), [400, 403]));
  it('advisor of another vendor', () => refused(call([advisor('b-pro-5')]), [400, 403]));
  it('a function-like custom tool with a model field', () =>
    refused(call([{ type: 'custom', name: 'f', input_schema: { type: 'object' }, model: 'a-top-5' }]), [400, 403]));
});
