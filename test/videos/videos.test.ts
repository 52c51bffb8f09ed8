// Video jobs without HTTP: request decomposition, the job store's claim/lease rules, signed file tokens.
import { beforeAll, describe, expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { systemClock } from '../../engine/core/clock.ts';
import { GatewayError } from '../../engine/core/errors.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { parseVideoRequest, sizeOf, vendorBody } from '../../engine/videos/request.ts';
import { createVideoStore, type NewVideoJob, type VideoStore } from '../../engine/videos/store.ts';
import { signFileToken, verifyFileToken } from '../../engine/videos/view.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const snapshot = new Runtime({ config: 'config', catalog: 'catalog' }).snapshot();
const catalog = snapshot.catalog;
const table = snapshot.config.videos;
const d1 = catalog.models.get('video-d-1')!;
const d2 = catalog.models.get('video-d-2')!;

function refusal(f: () => unknown): GatewayError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    return e as GatewayError;
  }
  throw new Error('expected a refusal');
}

describe('request decomposition', () => {
  it('every listed size maps to a resolution and aspect ratio whose computed size is the size itself', () => {
    for (const [size, { resolution, aspect_ratio }] of Object.entries(table.sizes)) expect(sizeOf(resolution, aspect_ratio)).toBe(size);
    expect(sizeOf('720p', '4:3')).toBe('960x720');
    expect(sizeOf('480p', '2:3')).toBe('480x720');
  });

  it('seconds: verbatim to the vendor, whole 1..15 for the hold', () => {
    expect(parseVideoRequest({ prompt: 'p', seconds: '12' }, d1, table)).toMatchObject({ duration: '12', seconds: 12 });
    expect(parseVideoRequest({ prompt: 'p', seconds: 1 }, d1, table)).toMatchObject({ duration: 1, seconds: 1 });
    expect(parseVideoRequest({ prompt: 'p' }, d1, table)).toMatchObject({ duration: 4, seconds: 4 });
    for (const bad of ['0', '16', ' 4', '4s', -1, 1.5, false, 0]) {
      expect(refusal(() => parseVideoRequest({ prompt: 'p', seconds: bad }, d1, table)).param).toBe('seconds');
    }
  });

  it('size wins over resolution and aspect_ratio; defaults are 720p 16:9', () => {
    expect(parseVideoRequest({ prompt: 'p', size: '720x1280', resolution: '480p', aspect_ratio: '1:1' }, d1, table)).toMatchObject({
      resolution: '720p',
      aspectRatio: '9:16',
      size: '720x1280',
    });
    expect(parseVideoRequest({ prompt: 'p' }, d1, table)).toMatchObject({ resolution: '720p', aspectRatio: '16:9', size: '1280x720' });
    expect(parseVideoRequest({ prompt: 'p', aspect_ratio: '3:2' }, d2, table)).toMatchObject({ resolution: '720p', size: '1080x720' });
  });

  it('a resolution the model does not price is refused', () => {
    expect(refusal(() => parseVideoRequest({ prompt: 'p', size: '1080x1080' }, d1, table)).message).toMatch(/does not produce 1080p/);
    expect(parseVideoRequest({ prompt: 'p', size: '1080x1080' }, d2, table).resolution).toBe('1080p');
  });

  it('starting image: https or data URI passed as given; a file becomes a data URI; two at once are refused', () => {
    const r = parseVideoRequest({ prompt: 'p', image_url: 'data:image/png;base64,AAAA' }, d1, table);
    expect(vendorBody('video-d-1', r)).toEqual({
      model: 'video-d-1',
      prompt: 'p',
      duration: 4,
      resolution: '720p',
      aspect_ratio: '16:9',
      image: { url: 'data:image/png;base64,AAAA' },
      generate_audio: true,
    });
    expect(parseVideoRequest({ prompt: 'p', input_reference: { image_url: 'https://x.test/a.png' } }, d1, table).imageUrl).toBe(
      'https://x.test/a.png',
    );
    const file = { contentType: 'image/jpeg', data: Buffer.from([1, 2, 3]) };
    expect(parseVideoRequest({ prompt: 'p' }, d1, table, file).imageUrl).toBe('data:image/jpeg;base64,AQID');
    expect(refusal(() => parseVideoRequest({ prompt: 'p', image_url: 'https://x.test/a.png' }, d1, table, file)).status).toBe(400);
    expect(refusal(() => parseVideoRequest({ prompt: 'p', image_url: 'ftp://x.test/a.png' }, d1, table)).param).toBe('image_url');
    expect(refusal(() => parseVideoRequest({ prompt: 'p' }, d1, table, { contentType: 'text/plain', data: Buffer.from('x') })).param).toBe(
      'input_reference',
    );
  });

  it('generate_audio: boolean or its form text; prompt length counted in characters', () => {
    expect(parseVideoRequest({ prompt: 'p', generate_audio: 'false' }, d1, table).generateAudio).toBe(false);
    expect(refusal(() => parseVideoRequest({ prompt: 'p', generate_audio: 'no' }, d1, table)).param).toBe('generate_audio');
    expect(parseVideoRequest({ prompt: '한'.repeat(32_000) }, d1, table).prompt).toHaveLength(32_000);
    expect(refusal(() => parseVideoRequest({ prompt: '😀'.repeat(32_001) }, d1, table)).param).toBe('prompt');
  });
});

describe('signed file tokens', () => {
  it('valid until expiry, for that id and secret only', () => {
    const tok = signFileToken('s', 'video_1', 1000);
    expect(verifyFileToken('s', 'video_1', tok, 1000)).toBe(true);
    expect(verifyFileToken('s', 'video_1', tok, 1001)).toBe(false);
    expect(verifyFileToken('s', 'video_2', tok, 999)).toBe(false);
    expect(verifyFileToken('t', 'video_1', tok, 999)).toBe(false);
    expect(verifyFileToken('s', 'video_1', tok.replace(/^1000/, '2000'), 999)).toBe(false);
    expect(verifyFileToken('s', 'video_1', 'garbage', 0)).toBe(false);
  });
});

describeEachDatabase('video job store: claims and leases', (getDb) => {
  let store: VideoStore;
  let walletId: string;
  beforeAll(async () => {
    store = createVideoStore(getDb());
    walletId = (await createLedger(getDb(), { clock: systemClock }).createWallet({ credits: 1 })).id;
  });

  let n = 0;
  const job = (over: Partial<NewVideoJob> = {}): NewVideoJob => {
    const now = new Date();
    return {
      id: `video_t${++n}`,
      walletId,
      keyId: 'key_t',
      idempotencyKey: null,
      model: 'video-d-1',
      vendor: 'd',
      seconds: '4',
      size: '1280x720',
      resolution: '720p',
      holdRef: `res_${n}`,
      holdNano: 1n,
      vendorRequest: { model: 'video-d-1' },
      createdAt: now,
      deadlineWall: new Date(now.getTime() + 60_000),
      nextPollAt: new Date(now.getTime() - 1),
      leaseOwner: 'creator',
      leaseUntil: new Date(now.getTime() - 1), // already lapsed: claimable
      ...over,
    };
  };

  it('two workers claiming at once never get the same job; a held lease is skipped until it lapses', async () => {
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push((await store.insert(job())).job.id);
    const held = (await store.insert(job({ leaseUntil: new Date(Date.now() + 60_000) }))).job.id;
    const now = new Date();
    const later = new Date(now.getTime() + 30_000);
    const [a, b] = await Promise.all([store.claim('A', now, later, 4), store.claim('B', now, later, 4)]);
    const got = [...a, ...b].map((j) => j.id);
    expect(new Set(got).size).toBe(got.length);
    expect(got.sort()).toEqual([...ids].sort());
    expect(got).not.toContain(held);
    expect(a.every((j) => j.leaseOwner === 'A') && b.every((j) => j.leaseOwner === 'B')).toBe(true);
    // Nothing left for a third worker while the leases run.
    expect(await store.claim('C', now, later, 10)).toEqual([]);
    // A write under a lease one no longer holds does nothing.
    expect(await store.patch(a[0]!.id, 'B', { progress: 50 })).toBe(false);
    expect(await store.patch(a[0]!.id, 'A', { progress: 50, status: 'in_progress' })).toBe(true);
    // Once the leases lapse the jobs can be claimed again (a dead process's jobs continue elsewhere).
    const lapsed = new Date(now.getTime() + 120_000);
    const afterLapse = await store.claim('C', lapsed, new Date(lapsed.getTime() + 60_000), 100);
    expect(afterLapse.map((j) => j.id)).toEqual(expect.arrayContaining([...ids, held]));
  });

  it('an idempotency key is unique per wallet: the second insert returns the first job', async () => {
    const first = await store.insert(job({ idempotencyKey: 'k' }));
    const second = await store.insert(job({ idempotencyKey: 'k' }));
    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(second.job.id).toBe(first.job.id);
  });

  it('the url secret is made once and shared', async () => {
    const a = await store.urlSecret();
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(await createVideoStore(getDb()).urlSecret()).toBe(a);
  });
});
