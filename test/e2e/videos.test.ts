// Video jobs end to end: POST /v1/videos answers a queued job at once, the worker polls vendor D (the simulator),
// stores the mp4 and settles exactly the vendor's charge; every failure code with its billing; the sibling doors.
// A fast poll (GATEWAY_VIDEO_POLL_MS) and a fast simulated vendor (videoStepMs) keep it to seconds.
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { VideoWorker } from '../../engine/videos/worker.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';
import { openai, post, sleep } from './e2e.ts';

const STEP_MS = 150; // simulator: pending one step, in_progress two, then the outcome
const POLL_MS = 25;

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ env: { GATEWAY_VIDEO_POLL_MS: String(POLL_MS) }, simulator: { videoStepMs: STEP_MS } });
});
afterAll(() => t?.close());

const get = (tg: TestGateway, path: string, key = tg.apiKey, init: RequestInit = {}) =>
  fetch(`${tg.url}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) } });

/** Polls GET /v1/videos/{id} until the job is finished; returns every status seen and the last object. */
async function waitFinished(tg: TestGateway, id: string, timeoutMs = 8000): Promise<{ seen: string[]; job: any }> {
  const seen: string[] = [];
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await get(tg, `/v1/videos/${id}`);
    expect(res.status).toBe(200);
    const job = (await res.json()) as any;
    if (seen[seen.length - 1] !== job.status) seen.push(job.status);
    if (job.status === 'completed' || job.status === 'failed') return { seen, job };
    if (Date.now() > until) throw new Error(`video ${id} still ${job.status} after ${timeoutMs} ms`);
    await sleep(10);
  }
}

const reserved = async (tg: TestGateway) => await tg.held();
const videoCreates = (tg: TestGateway) => tg.received('d').filter((r) => r.path === '/v1/videos/generations');

async function create(tg: TestGateway, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await post(tg, '/v1/videos', body, headers);
  const json = (await res.json()) as any;
  return { res, json };
}

describe('lifecycle', () => {
  it('SDK create → queued at once, then in_progress, then completed; the vendor charge is debited exactly', async () => {
    const client = openai(t);
    const before = await t.balance();
    const n = videoCreates(t).length;
    const video = await client.videos.create({
      model: 'video-d-1',
      prompt: 'a lighthouse at dawn [[sim:cost=0.123]]',
      seconds: '4',
      size: '1280x720',
    });
    expect(video.id).toMatch(/^video_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(video).toMatchObject({ object: 'video', model: 'video-d-1', status: 'queued', progress: 0, seconds: '4', size: '1280x720' });
    expect(video).toMatchObject({ completed_at: null, expires_at: null, error: null });
    expect(typeof video.created_at).toBe('number');
    expect(video).not.toHaveProperty('usage');
    expect(Object.keys(video).sort()).toEqual(
      ['id', 'object', 'model', 'status', 'progress', 'seconds', 'size', 'created_at', 'completed_at', 'expires_at', 'error'].sort(),
    );
    // 4 s × $0.07 (720p on video-d-1) is held while the job runs.
    expect(await reserved(t)).toBe(4n * 70_000_000n);

    const { seen, job } = await waitFinished(t, video.id);
    expect(seen).toEqual(expect.arrayContaining(['in_progress', 'completed']));
    expect(seen.indexOf('in_progress')).toBeLessThan(seen.indexOf('completed'));
    expect(job.progress).toBe(100);
    expect(job.error).toBeNull();
    expect(job.usage).toEqual({ seconds: 4, resolution: '720p', cost_usd: 0.123 });
    expect(typeof job.completed_at).toBe('number');
    expect(job.expires_at).toBe(job.completed_at + 7 * 86_400);
    expect(before - (await t.balance())).toBe(123_000_000n);
    expect(await reserved(t)).toBe(0n);
    // The job's usage record, by its video id, written with its settlement.
    const record = await (await fetch(`${t.url}/v1/generations/${video.id}`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json();
    expect(record).toMatchObject({
      id: video.id,
      door: 'videos',
      model: 'video-d-1',
      vendor: 'd',
      video_seconds: 4,
      charged_nano: '123000000',
    });

    // What vendor D received: one create, seconds verbatim as duration, size decomposed.
    const sent = videoCreates(t).slice(n);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body).toEqual({
      model: 'video-d-1',
      prompt: 'a lighthouse at dawn [[sim:cost=0.123]]',
      duration: '4',
      resolution: '720p',
      aspect_ratio: '16:9',
      generate_audio: true,
    });

    const retrieved = await client.videos.retrieve(video.id);
    expect(retrieved.status).toBe('completed');
    const content = await client.videos.downloadContent(video.id); // follows the 302
    const bytes = Buffer.from(await content.arrayBuffer());
    expect(bytes.subarray(4, 8).toString()).toBe('ftyp');
  });

  // Found by the fuzzer: an object with its own `toString`, or a size named like an object's built-in member.
  it.each([{ toString: 0 }, 'toString', '__proto__'])('a size of %j is a 400 naming size, never a 5xx', async (size) => {
    const { res, json } = await create(t, { model: 'video-d-1', prompt: 'a cat', seconds: 1, size });
    expect(res.status).toBe(400);
    expect(json.error.param).toBe('size');
  });

  it('content redirects to a short-lived signed address that needs no key; a forged token is refused', async () => {
    const { json } = await create(t, { model: 'video-d-1', prompt: 'a cat', seconds: 1, size: '854x480' });
    await waitFinished(t, json.id);
    const res = await get(t, `/v1/videos/${json.id}/content`, t.apiKey, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = res.headers.get('location')!;
    expect(location).toMatch(new RegExp(`^/v1/videos/${json.id}/file\\?token=\\d+\\.[\\w-]+$`));
    const file = await fetch(`${t.url}${location}`); // no Authorization header
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('video/mp4');
    expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(0);
    const forged = await fetch(`${t.url}${location.replace(/\.[\w-]+$/, `.${'A'.repeat(43)}`)}`);
    expect(forged.status).toBe(403);
    const otherId = await fetch(`${t.url}${location.replace(json.id, 'video_00000000-0000-4000-8000-000000000000')}`);
    expect(otherId.status).toBe(403);
  });
});

describe('failures and their billing', () => {
  const cases = [
    { tag: '[[sim:input_moderated cost=0.05]]', code: 'moderation_blocked', debit: 50_000_000n, cost: 0.05 },
    { tag: '[[sim:output_moderated]]', code: 'moderation_blocked', debit: 0n, cost: 0 },
    { tag: '[[sim:fail]]', code: 'vendor_failed', debit: 0n, cost: 0 },
    { tag: '[[sim:undeliverable]]', code: 'undelivered', debit: 0n, cost: 0 },
  ];
  for (const c of cases) {
    it(`${c.tag} → failed ${c.code}, debit ${c.debit} nano`, async () => {
      const before = await t.balance();
      const { res, json } = await create(t, { model: 'video-d-2', prompt: `a storm ${c.tag}`, seconds: '5', size: '1280x720' });
      expect(res.status).toBe(200);
      expect(json.status).toBe('queued');
      const { job } = await waitFinished(t, json.id);
      expect(job.status).toBe('failed');
      expect(job.error.code).toBe(c.code);
      expect(job.usage).toEqual({ seconds: 5, resolution: '720p', cost_usd: c.cost });
      expect(job.completed_at).toBeNull();
      expect(job.expires_at).toBeNull();
      expect(before - (await t.balance())).toBe(c.debit);
      expect(await reserved(t)).toBe(0n);
      expect((await get(t, `/v1/videos/${json.id}/content`)).status).toBe(404);
    });
  }

  it('a delivered video whose status names no charge is charged the catalog price of its seconds, never free', async () => {
    // Found by an attack: with no usage.cost_usd the job completed, its file downloadable, and its hold went back.
    const before = await t.balance();
    t.sim.inject('d0', { kind: 'usage-missing', times: 1_000 });
    try {
      const { json } = await create(t, { model: 'video-d-2', prompt: 'free? [[sim:cost=3]]', seconds: '5', size: '1280x720' });
      const { job } = await waitFinished(t, json.id);
      expect(job.status).toBe('completed');
      // 5 s × $0.14 (720p on video-d-2): what was held per second, for the seconds delivered.
      expect(job.usage).toEqual({ seconds: 5, resolution: '720p', cost_usd: 0.7 });
      expect(before - (await t.balance())).toBe(700_000_000n);
      expect(await reserved(t)).toBe(0n);
    } finally {
      t.sim.clearFaults();
    }
  });

  it('the create call failing on every route → failed vendor_failed, hold released', async () => {
    const before = await t.balance();
    t.sim.inject('d0', { kind: 'status', status: 500 });
    t.sim.inject('d1', { kind: 'reset' });
    const { json } = await create(t, { model: 'video-d-1', prompt: 'nobody home' });
    expect(json.status).toBe('queued');
    const { job } = await waitFinished(t, json.id);
    expect(job.error.code).toBe('vendor_failed');
    expect(job.usage.cost_usd).toBe(0);
    expect(await t.balance()).toBe(before);
    expect(await reserved(t)).toBe(0n);
  });

  it('a create whose connection breaks after it was sent is not sent to another route (that could make two jobs)', async () => {
    // Found by an attack: the create went to d1 after d0 read it and reset, so a vendor that had taken the first
    // would run, and bill, a job the gateway never polls.
    const before = await t.balance();
    const d1Creates = () => t.sim.receivedOn('d1').filter((r) => r.path === '/v1/videos/generations').length;
    const n1 = d1Creates();
    t.sim.inject('d0', { kind: 'reset' });
    const { json } = await create(t, { model: 'video-d-1', prompt: 'only once' });
    const { job } = await waitFinished(t, json.id);
    expect(job.error.code).toBe('vendor_failed');
    expect(d1Creates()).toBe(n1);
    expect(await t.balance()).toBe(before);
    expect(await reserved(t)).toBe(0n);
  });

  it('a create the vendor answered is never sent to another route, whatever the answer; a broken answer ends the job at once', async () => {
    // Found by an attack: a 200 without a request_id, or a 500, sent the create on to d1, and the vendor made two
    // jobs; a 200 whose body broke left the job queued, its hold taken, until the 20-minute deadline.
    const faults = [
      { kind: 'wrong-body', body: { id: 'job_without_request_id' } },
      { kind: 'status', status: 500 },
      { kind: 'stall', ms: 20, headers: true },
    ] as const;
    for (const fault of faults) {
      const before = await t.balance();
      const d1Creates = () => t.sim.receivedOn('d1').filter((r) => r.path === '/v1/videos/generations').length;
      const n1 = d1Creates();
      t.sim.inject('d0', fault);
      try {
        const { json } = await create(t, { model: 'video-d-1', prompt: `only once ${fault.kind}` });
        const { job } = await waitFinished(t, json.id);
        expect(job.error.code, fault.kind).toBe('vendor_failed');
        expect(d1Creates(), fault.kind).toBe(n1);
        expect(await t.balance()).toBe(before);
        expect(await reserved(t)).toBe(0n);
      } finally {
        t.sim.clearFaults();
      }
    }
  });

  it('429 on the primary route: the create falls back to the next route and the job completes', async () => {
    const n0 = t.sim.receivedOn('d1').length;
    t.sim.inject('d0', { kind: 'status', status: 429 });
    const { json } = await create(t, { model: 'video-d-1', prompt: 'fallback [[sim:cost=0.2]]', seconds: 4 });
    const { job } = await waitFinished(t, json.id);
    expect(job.status).toBe('completed');
    expect(job.usage.cost_usd).toBe(0.2);
    expect(
      t.sim
        .receivedOn('d1')
        .slice(n0)
        .some((r) => r.path === '/v1/videos/generations'),
    ).toBe(true);
  });
});

describe('parameters', () => {
  it('seconds go to the vendor verbatim: an integer stays a number, a string stays a string; the hold uses the same value', async () => {
    const n = videoCreates(t).length;
    const a = await create(t, { model: 'video-d-1', prompt: 'int [[sim:never]]', seconds: 8, size: '854x480' });
    expect(a.json.seconds).toBe('8');
    expect(await reserved(t)).toBe(8n * 50_000_000n); // 480p on video-d-1: $0.05/s
    const b = await create(t, { model: 'video-d-1', prompt: 'str [[sim:never]]', seconds: '15', size: '854x480' });
    expect(b.json.seconds).toBe('15');
    await sleep(100);
    const sent = new Map(
      videoCreates(t)
        .slice(n)
        .map((r) => [(r.body as any).prompt.split(' ')[0], (r.body as any).duration]),
    );
    expect(sent.get('int')).toBe(8);
    expect(sent.get('str')).toBe('15');
    expect(await reserved(t)).toBe((8n + 15n) * 50_000_000n);
  });

  it('default seconds is 4; out-of-range or malformed seconds are 400 before any vendor call', async () => {
    const n = videoCreates(t).length;
    const { json } = await create(t, { model: 'video-d-1', prompt: 'default [[sim:never]]' });
    expect(json.seconds).toBe('4');
    for (const seconds of [0, 16, '16', '4.5', 2.5, 'four', true]) {
      const res = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'x', seconds });
      expect(res.status, String(seconds)).toBe(400);
      expect(((await res.json()) as any).error.param).toBe('seconds');
    }
    await sleep(100);
    expect(videoCreates(t).length).toBe(n + 1); // the default job only
    expect((videoCreates(t)[n]!.body as any).duration).toBe(4);
  });

  it('size is decomposed into resolution and aspect ratio, and wins over both', async () => {
    const n = videoCreates(t).length;
    const a = await create(t, { model: 'video-d-2', prompt: 'portrait [[sim:never]]', size: '480x854' });
    expect(a.json.size).toBe('480x854');
    const b = await create(t, { model: 'video-d-2', prompt: 'square [[sim:never]]', resolution: '720p', aspect_ratio: '1:1' });
    expect(b.json.size).toBe('720x720');
    const c = await create(t, {
      model: 'video-d-2',
      prompt: 'both [[sim:never]]',
      size: '1920x1080',
      resolution: '480p',
      aspect_ratio: '1:1',
    });
    expect(c.json.size).toBe('1920x1080');
    // The worker sends each job on its own: wait for all three (bounded), not a fixed pause a loaded machine outlasts.
    for (let i = 0; i < 100 && videoCreates(t).length - n < 3; i++) await sleep(50);
    const sent = new Map(
      videoCreates(t)
        .slice(n)
        .map((r) => [(r.body as any).prompt.split(' ')[0], r.body as any]),
    );
    expect([...sent.keys()].sort()).toEqual(['both', 'portrait', 'square']);
    expect([sent.get('portrait').resolution, sent.get('portrait').aspect_ratio]).toEqual(['480p', '9:16']);
    expect([sent.get('square').resolution, sent.get('square').aspect_ratio]).toEqual(['720p', '1:1']);
    expect([sent.get('both').resolution, sent.get('both').aspect_ratio]).toEqual(['1080p', '16:9']);
  });

  it('1080p on video-d-1 → 400 (by size or by resolution); an unlisted size → 400; nothing sent', async () => {
    const n = videoCreates(t).length;
    for (const body of [{ size: '1920x1080' }, { resolution: '1080p' }, { size: '1024x1024' }, { aspect_ratio: '21:9' }]) {
      const res = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'x', ...body });
      const text = await res.text();
      expect(res.status, text).toBe(400);
      expect(JSON.parse(text).error.type).toBe('invalid_request_error');
    }
    const res = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'x', resolution: '1080p' });
    expect(((await res.json()) as any).error.message).toMatch(/1080p/);
    expect(videoCreates(t).length).toBe(n);
  });

  it('a prompt over 32,000 characters → 400', async () => {
    const res = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'x'.repeat(32_001) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.param).toBe('prompt');
  });

  it('image_url (https) passes through as image.url unfetched; http is refused; generate_audio false is sent', async () => {
    const n = videoCreates(t).length;
    const { res } = await create(t, {
      model: 'video-d-1',
      prompt: 'from an image [[sim:never]]',
      image_url: 'https://example.invalid/start.png',
      generate_audio: false,
    });
    expect(res.status).toBe(200);
    await sleep(100);
    const sent = videoCreates(t).slice(n)[0]!.body as any;
    expect(sent.image).toEqual({ url: 'https://example.invalid/start.png' });
    expect(sent.generate_audio).toBe(false);
    const bad = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'x', image_url: 'http://example.invalid/a.png' });
    expect(bad.status).toBe(400);
  });

  it('multipart with an input_reference file (SDK): converted to a data URI for the vendor', async () => {
    const client = openai(t);
    const n = videoCreates(t).length;
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const video = await client.videos.create({
      model: 'video-d-1',
      prompt: 'animate it [[sim:never]]',
      seconds: '4',
      input_reference: await toFile(png, 'start.png', { type: 'image/png' }),
    });
    expect(video.status).toBe('queued');
    await sleep(100);
    const sent = videoCreates(t).slice(n)[0]!.body as any;
    expect(sent.image.url).toBe(`data:image/png;base64,${png.toString('base64')}`);
    expect(sent.duration).toBe('4');
  });

  it('an input_reference file above 4 MB → 413, nothing held or sent', async () => {
    const n = videoCreates(t).length;
    const before = await t.balance();
    const form = new FormData();
    form.set('model', 'video-d-1');
    form.set('prompt', 'too big');
    form.set('input_reference', new Blob([Buffer.alloc(4 * 1024 * 1024 + 1)], { type: 'image/png' }), 'big.png');
    const res = await fetch(`${t.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error.type).toBe('request_too_large');
    expect(videoCreates(t).length).toBe(n);
    expect(await t.balance()).toBe(before);
  });

  it('a form may name the starting image by URL, as input_reference[image_url] or input_reference; a file and a URL together are 400', async () => {
    const n = videoCreates(t).length;
    const send = (prompt: string, fill: (form: FormData) => void) => {
      const form = new FormData();
      form.set('model', 'video-d-1');
      form.set('prompt', `${prompt} [[sim:never]]`);
      fill(form);
      return fetch(`${t.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
    };
    expect((await send('nested', (f) => f.set('input_reference[image_url]', 'https://example.invalid/nested.png'))).status).toBe(200);
    expect((await send('plain', (f) => f.set('input_reference', 'https://example.invalid/plain.png'))).status).toBe(200);
    for (let waited = 0; videoCreates(t).length < n + 2 && waited < 2000; waited += 20) await sleep(20); // sent in the background
    const sent = new Map(
      videoCreates(t)
        .slice(n)
        .map((r) => [(r.body as any).prompt.split(' ')[0], (r.body as any).image?.url]),
    );
    expect(sent.get('nested')).toBe('https://example.invalid/nested.png');
    expect(sent.get('plain')).toBe('https://example.invalid/plain.png');

    const before = await t.balance();
    const both = await send('both', (f) => {
      f.set('input_reference[image_url]', 'https://example.invalid/both.png');
      f.set('input_reference', new Blob([Buffer.from('89504e47', 'hex')], { type: 'image/png' }), 'both.png');
    });
    expect(both.status).toBe(400);
    expect(((await both.json()) as any).error.param).toBe('input_reference');
    await sleep(50);
    expect(videoCreates(t).length).toBe(n + 2);
    expect(await t.balance()).toBe(before);
  });
});

describe('refusals before any charge', () => {
  it('a text model → 400 naming /v1/chat/completions', async () => {
    const res = await post(t, '/v1/videos', { model: 'b-5', prompt: 'x' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toContain('/v1/chat/completions');
  });

  it('an unknown model → 404 model_not_found', async () => {
    const res = await post(t, '/v1/videos', { model: 'video-d-3', prompt: 'x' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.type).toBe('model_not_found');
  });

  it('a student key → 403; nothing sent', async () => {
    const w = await t.gw.ledger.createWallet({ credits: 10_000_000, splitsUsage: true });
    const { key } = await t.gw.keys.createApiKey(w.id, { audience: 'student' });
    const n = videoCreates(t).length;
    const res = await fetch(`${t.url}/v1/videos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'video-d-1', prompt: 'x' }),
    });
    expect(res.status).toBe(403);
    expect(videoCreates(t).length).toBe(n);
  });

  it('no key → 401', async () => {
    const res = await fetch(`${t.url}/v1/videos`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"video-d-1","prompt":"x"}',
    });
    expect(res.status).toBe(401);
  });

  it('balance below seconds × price → 402 insufficient_credit, nothing sent or held', async () => {
    const w = await t.gw.ledger.createWallet({ credits: 279_999 }); // 4 s × $0.07 = $0.28 = 280,000 credits
    const { key } = await t.gw.keys.createApiKey(w.id);
    const n = videoCreates(t).length;
    const res = await fetch(`${t.url}/v1/videos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'video-d-1', prompt: 'x', seconds: '4', size: '1280x720' }),
    });
    expect(res.status).toBe(402);
    expect(((await res.json()) as any).error.type).toBe('insufficient_credit');
    expect(videoCreates(t).length).toBe(n);
    expect((await t.gw.ledger.balance(w.id)).reservedNano).toBe(0n);
  });
});

describe('Idempotency-Key', () => {
  it('a repeat returns the first job and makes no second vendor job or hold', async () => {
    const n = videoCreates(t).length;
    const body = { model: 'video-d-1', prompt: 'once [[sim:cost=0.01]]', seconds: '2', size: '854x480' };
    const first = await create(t, body, { 'idempotency-key': 'same-key-1' });
    const again = await create(t, body, { 'idempotency-key': 'same-key-1' });
    expect(again.json.id).toBe(first.json.id);
    const { job } = await waitFinished(t, first.json.id);
    const third = await create(t, body, { 'idempotency-key': 'same-key-1' });
    expect(third.json).toEqual(job);
    expect(videoCreates(t).slice(n)).toHaveLength(1);
    expect(await reserved(t)).toBe(await reservedByNever());
    // Another wallet using the same key makes its own job.
    const w = await t.gw.ledger.createWallet({ credits: 10_000_000 });
    const { key } = await t.gw.keys.createApiKey(w.id);
    const other = await fetch(`${t.url}/v1/videos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'same-key-1' },
      body: JSON.stringify(body),
    });
    expect(((await other.json()) as any).id).not.toBe(first.json.id);
  });
});

describe('Idempotency-Key of a deleted video', () => {
  it('answers 404 as GET on the job does, and makes no new job, vendor call or hold', async () => {
    const body = { model: 'video-d-1', prompt: 'short-lived [[sim:cost=0.01]]', seconds: '2', size: '854x480' };
    const first = await create(t, body, { 'idempotency-key': 'deleted-key-1' });
    await waitFinished(t, first.json.id);
    const del = await fetch(`${t.url}/v1/videos/${first.json.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(del.status).toBe(200);
    expect((await get(t, `/v1/videos/${first.json.id}`)).status).toBe(404);
    const n = videoCreates(t).length;
    const before = await t.balance();
    const again = await create(t, body, { 'idempotency-key': 'deleted-key-1' });
    expect(again.res.status, JSON.stringify(again.json)).toBe(404);
    expect(again.json.error.type).toBe('not_found_error');
    expect(again.json.error.message).toContain(first.json.id);
    expect(videoCreates(t).length).toBe(n);
    expect(await t.balance()).toBe(before);
    expect(await reserved(t)).toBe(await reservedByNever());
  });
});

/** Holds of the [[sim:never]] jobs the parameter tests left running (they finish only at the deadline). */
async function reservedByNever(): Promise<bigint> {
  const rows = await t.gw.db.query<{ n: string }>(
    `SELECT coalesce(sum(hold_nano), 0)::text AS n FROM video_jobs WHERE wallet_id = $1 AND status IN ('queued', 'in_progress')`,
    [t.walletId],
  );
  return BigInt(rows.rows[0]!.n);
}

describe('retrieve, delete, list', () => {
  it('delete removes the file at once (no refund); afterwards content, retrieve and delete answer 404', async () => {
    const { json } = await create(t, { model: 'video-d-1', prompt: 'to delete [[sim:cost=0.04]]', seconds: '1', size: '854x480' });
    await waitFinished(t, json.id);
    const job = await t.gw.videos.store.get(json.id);
    const path = `${t.gw.videos.files.where}/${job!.fileName}`;
    const { existsSync } = await import('node:fs');
    expect(existsSync(path)).toBe(true);
    const balance = await t.balance();
    const del = await get(t, `/v1/videos/${json.id}`, t.apiKey, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ id: json.id, object: 'video.deleted', deleted: true });
    expect(existsSync(path)).toBe(false);
    expect(await t.balance()).toBe(balance);
    expect((await get(t, `/v1/videos/${json.id}/content`)).status).toBe(404);
    const again = await get(t, `/v1/videos/${json.id}`);
    expect(again.status).toBe(404);
    expect(((await again.json()) as any).error.type).toBe('not_found_error');
    expect((await get(t, `/v1/videos/${json.id}`, t.apiKey, { method: 'DELETE' })).status).toBe(404);
  });

  it('a job still running cannot be deleted (409)', async () => {
    const { json } = await create(t, { model: 'video-d-1', prompt: 'running [[sim:never]]', seconds: '1' });
    const res = await get(t, `/v1/videos/${json.id}`, t.apiKey, { method: 'DELETE' });
    expect(res.status).toBe(409);
  });

  it("another wallet's key sees 404 on retrieve, content, delete; unknown ids are 404", async () => {
    const { json } = await create(t, { model: 'video-d-1', prompt: 'mine', seconds: '1', size: '854x480' });
    await waitFinished(t, json.id);
    const w = await t.gw.ledger.createWallet({ credits: 1_000_000 });
    const { key } = await t.gw.keys.createApiKey(w.id);
    expect((await get(t, `/v1/videos/${json.id}`, key)).status).toBe(404);
    expect((await get(t, `/v1/videos/${json.id}/content`, key)).status).toBe(404);
    expect((await get(t, `/v1/videos/${json.id}`, key, { method: 'DELETE' })).status).toBe(404);
    expect((await get(t, `/v1/videos/${json.id}`)).status).toBe(200);
    expect((await get(t, '/v1/videos/video_00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const list = (await (await get(t, '/v1/videos', key)).json()) as any;
    expect(list).toEqual({ object: 'list', data: [], has_more: false, first_id: null, last_id: null });
  });

  it('list: newest first, limit and after cursor, SDK pagination', async () => {
    const w = await t.gw.ledger.createWallet({ credits: 10_000_000 });
    const { key } = await t.gw.keys.createApiKey(w.id);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${t.url}/v1/videos`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'video-d-1', prompt: `n${i} [[sim:never]]`, seconds: 1, size: '480x480' }),
      });
      ids.push(((await res.json()) as any).id);
    }
    const page1 = (await (await get(t, '/v1/videos?limit=2', key)).json()) as any;
    expect(page1.object).toBe('list');
    expect(page1.data.map((v: any) => v.id)).toEqual([ids[2], ids[1]]);
    expect(page1).toMatchObject({ has_more: true, first_id: ids[2], last_id: ids[1] });
    const page2 = (await (await get(t, `/v1/videos?limit=2&after=${page1.last_id}`, key)).json()) as any;
    expect(page2.data.map((v: any) => v.id)).toEqual([ids[0]]);
    expect(page2.has_more).toBe(false);
    const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const all: string[] = [];
    for await (const v of client.videos.list({ limit: 1 })) all.push(v.id);
    expect(all).toEqual([ids[2], ids[1], ids[0]]);
    expect((await get(t, '/v1/videos?limit=0', key)).status).toBe(400);
  });
});

describe('persistence', () => {
  it('a job created by one worker is finished by another (a second process, or the same after a restart)', async () => {
    await t.gw.videos.worker.stop(); // this process stops polling; its submission still happens
    const before = await t.balance();
    const { json } = await create(t, { model: 'video-d-1', prompt: 'handover [[sim:cost=0.05]]', seconds: '1', size: '854x480' });
    await sleep(STEP_MS * 4);
    expect(((await (await get(t, `/v1/videos/${json.id}`)).json()) as any).status).toBe('queued');
    const other = new VideoWorker({
      store: t.gw.videos.store,
      files: t.gw.videos.files,
      accounts: (t.gw.videos.worker as any).deps.accounts,
      runtime: t.gw.runtime,
      routes: t.gw.routes,
      upstream: (t.gw.videos.worker as any).deps.upstream,
      clock: (t.gw.videos.worker as any).deps.clock,
      pollMs: POLL_MS,
      owner: 'another-process',
    });
    other.start();
    try {
      const { job } = await waitFinished(t, json.id);
      expect(job.status).toBe('completed');
      expect(before - (await t.balance())).toBe(50_000_000n);
    } finally {
      await other.stop();
      t.gw.videos.worker.start();
    }
  });
});

describe('a vendor a reload dropped', () => {
  it('a worker whose config has no vendor D asks it nothing; the job waits, whole, for one that has it', async () => {
    await t.gw.videos.worker.stop(); // this process stops polling; its submission still happens
    const { json } = await create(t, { model: 'video-d-1', prompt: 'dropped [[sim:cost=0.05]]', seconds: '1', size: '854x480' });
    await sleep(STEP_MS * 2);
    const snapshot = () => {
      const snap = t.gw.runtime.snapshot();
      const { d: _dropped, ...vendors } = snap.config.vendors;
      return { ...snap, config: { ...snap.config, vendors } };
    };
    const worker = (t.gw.videos.worker as any).deps;
    const failures: unknown[] = [];
    const log = { info: () => undefined, warn: () => undefined, error: (o: object) => failures.push(o) };
    const runtime = { snapshot } as unknown as typeof t.gw.runtime;
    const other = new VideoWorker({ ...worker, runtime, owner: 'without-d', log });
    const asked = t.received('d').length;
    other.start();
    try {
      await sleep(STEP_MS * 4);
      expect(t.received('d').length).toBe(asked);
      expect(failures).toEqual([]);
      expect(((await (await get(t, `/v1/videos/${json.id}`)).json()) as any).status).toBe('queued');
    } finally {
      await other.stop();
      t.gw.videos.worker.start();
    }
    const { job } = await waitFinished(t, json.id);
    expect(job.status).toBe('completed');
  });
});

describe('deadline', () => {
  let tree: TempTree;
  let short: TestGateway;
  beforeAll(async () => {
    tree = tempCatalogTree();
    tree.edit('config/limits.yaml', (text) => text.replace(/video_deadline_ms: \d+/, 'video_deadline_ms: 1000'));
    short = await startTestGateway({ dirs: tree, env: { GATEWAY_VIDEO_POLL_MS: String(POLL_MS) }, simulator: { videoStepMs: STEP_MS } });
  });
  afterAll(async () => {
    await short?.close();
    tree?.remove();
  });

  it('not finished within video_deadline_ms → failed timed_out, nothing debited, hold released', async () => {
    const before = await short.balance();
    const { json } = await create(short, { model: 'video-d-1', prompt: 'forever [[sim:never]]', seconds: '3' });
    const { seen, job } = await waitFinished(short, json.id);
    expect(seen).toContain('in_progress');
    expect(job.status).toBe('failed');
    expect(job.error.code).toBe('timed_out');
    expect(job.usage).toEqual({ seconds: 3, resolution: '720p', cost_usd: 0 });
    expect(await short.balance()).toBe(before);
    expect(await reserved(short)).toBe(0n);
  });
});

describe('gateway clock: quota day and retention', () => {
  const clock = fixedClock('2026-11-21T14:55:00Z'); // 23:55 Korean time
  let c: TestGateway;
  beforeAll(async () => {
    c = await startTestGateway({ clock, env: { GATEWAY_VIDEO_POLL_MS: String(POLL_MS) }, simulator: { videoStepMs: 150 } });
  });
  afterAll(() => c?.close());

  it('a job that ends after midnight (Korean time) counts on the next day; its file is deleted 7 days after completion', async () => {
    const { json } = await create(c, { model: 'video-d-1', prompt: 'midnight [[sim:cost=0.07]]', seconds: '1', size: '1280x720' });
    clock.set('2026-11-21T15:05:00Z'); // 00:05 on 2026-11-22 in Korea, before the vendor is done
    const { job } = await waitFinished(c, json.id);
    expect(job.status).toBe('completed');
    expect(job.completed_at).toBe(Date.parse('2026-11-21T15:05:00Z') / 1000);
    // Counted on the Korean day its record carries (the rollup the key's figures sum): the 22nd, in November.
    const usage = await c.gw.db.query<{ key_id: string; day: string; nano: string }>(
      `SELECT key_id, to_char(day, 'YYYY-MM-DD') AS day, sum(charged_nano)::text AS nano FROM usage_daily GROUP BY 1, 2 ORDER BY 2`,
    );
    expect(usage.rows.map((r) => [r.day, r.nano])).toEqual([['2026-11-22', '70000000']]);
    const keyId = usage.rows[0]!.key_id;
    expect((await c.gw.keys.quota.usage([keyId], clock.now())).get(keyId)).toEqual({ dayNano: 70_000_000n, monthNano: 70_000_000n });
    expect((await c.gw.keys.quota.usage([keyId], new Date('2026-11-21T14:00:00Z'))).get(keyId)).toEqual({
      dayNano: 0n,
      monthNano: 70_000_000n,
    });

    const stored = await c.gw.videos.store.get(json.id);
    const { existsSync } = await import('node:fs');
    const path = `${c.gw.videos.files.where}/${stored!.fileName}`;
    expect(existsSync(path)).toBe(true);
    clock.set(new Date((job.expires_at - 1) * 1000));
    expect(await c.gw.videos.worker.sweepFiles()).toBe(0);
    expect((await get(c, `/v1/videos/${json.id}/content`, c.apiKey, { redirect: 'manual' })).status).toBe(302);
    clock.set(new Date(job.expires_at * 1000));
    expect(await c.gw.videos.worker.sweepFiles()).toBe(1);
    expect(existsSync(path)).toBe(false);
    expect((await get(c, `/v1/videos/${json.id}/content`)).status).toBe(404);
    expect((await get(c, `/v1/videos/${json.id}`)).status).toBe(404); // past retention: the id is gone
  });
});
