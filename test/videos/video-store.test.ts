// GATEWAY_VIDEO_STORE: what start accepts and refuses, and the S3 store on a real S3-compatible server
// (moto_server): a video streams into the bucket as it arrives, reads back the same, and is deleted.
import { spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../engine/gateway.ts';
import type { VideoFiles } from '../../engine/videos/files.ts';
import { openVideoFiles } from '../../engine/videos/index.ts';
import { videoStoreFromEnv } from '../../engine/videos/video-store-setting.ts';
import { waitForOutput } from '../helpers/process-output.ts';
import { s3Availability, startTestS3, type TestS3 } from '../helpers/s3-server.ts';

describe('GATEWAY_VIDEO_STORE at start', () => {
  it('unset, empty or file: the data folder', () => {
    for (const v of [undefined, '', 'file']) expect(videoStoreFromEnv({ GATEWAY_VIDEO_STORE: v })).toEqual({ kind: 'file' });
  });

  it('s3://BUCKET[/PREFIX] with the standard AWS variables; a custom endpoint needs no region', () => {
    const aws = { AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 'secret', AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9000' };
    expect(videoStoreFromEnv({ GATEWAY_VIDEO_STORE: 's3://videos/gw/one/', ...aws })).toEqual({
      kind: 's3',
      bucket: 'videos',
      prefix: 'gw/one',
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9000',
      credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
    });
    expect(videoStoreFromEnv({ GATEWAY_VIDEO_STORE: 's3://videos', AWS_REGION: 'eu-west-1' })).toEqual({
      kind: 's3',
      bucket: 'videos',
      prefix: '',
      region: 'eu-west-1',
    });
  });

  it.each([
    ['ftp://videos', /GATEWAY_VIDEO_STORE must be 'file' or s3:\/\/BUCKET\[\/PREFIX\], not 'ftp:\/\/videos'/],
    ['s3://', /GATEWAY_VIDEO_STORE must be/],
    ['s3://Videos_Bucket', /GATEWAY_VIDEO_STORE: 'Videos_Bucket' is not an S3 bucket name/],
    ['s3://videos//x', /GATEWAY_VIDEO_STORE: the prefix '\/x'/],
    ['s3://videos/a/../b', /GATEWAY_VIDEO_STORE: the prefix 'a\/..\/b'/],
  ])('%s is refused, naming the variable', (value, message) => {
    expect(() => videoStoreFromEnv({ GATEWAY_VIDEO_STORE: value, AWS_REGION: 'us-east-1' })).toThrow(message);
  });

  it('an S3 store without a region (real AWS), a half credential or an endpoint that is not a URL is refused', () => {
    expect(() => videoStoreFromEnv({ GATEWAY_VIDEO_STORE: 's3://videos' })).toThrow(/GATEWAY_VIDEO_STORE=s3:\/\/videos needs AWS_REGION/);
    expect(() => videoStoreFromEnv({ GATEWAY_VIDEO_STORE: 's3://videos', AWS_REGION: 'x', AWS_ACCESS_KEY_ID: 'id' })).toThrow(
      /AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together/,
    );
    expect(() => videoStoreFromEnv({ GATEWAY_VIDEO_STORE: 's3://videos', AWS_ENDPOINT_URL_S3: 'minio:9000' })).toThrow(
      /AWS_ENDPOINT_URL_S3 'minio:9000' is not an http\(s\) address/,
    );
  });

  it('createGateway refuses a bad value before it opens anything', async () => {
    await expect(createGateway({ env: { GATEWAY_VIDEO_STORE: 'disk', GATEWAY_DATA_DIR: 'memory://' }, logger: false })).rejects.toThrow(
      /GATEWAY_VIDEO_STORE/,
    );
  });

  it('npm start with a bad value exits non-zero with one sentence naming the variable, no stack', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'engine/main.ts'], {
      env: { ...process.env, GATEWAY_VIDEO_STORE: 'bucket-name', GATEWAY_DATA_DIR: 'memory://', PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = { text: '' };
    child.stdout!.on('data', (d) => (out.text += d));
    child.stderr!.on('data', (d) => (out.text += d));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).not.toBe(0);
    await waitForOutput(
      out,
      /The gateway did not start: GATEWAY_VIDEO_STORE must be 'file' or s3:\/\/BUCKET\[\/PREFIX\], not 'bucket-name'\.\n/,
      1000,
    );
    expect(out.text).not.toMatch(/^\s+at /m); // a sentence for the operator, not a stack
  }, 30_000);
});

describe.skipIf(!s3Availability.ok)('the S3 video store on moto_server', () => {
  let s3: TestS3;
  let files: VideoFiles;
  beforeAll(async () => {
    s3 = await startTestS3();
    files = openVideoFiles(videoStoreFromEnv(s3.env('store-test')), 'memory://');
  }, 40_000);
  afterAll(async () => {
    files?.close();
    await s3?.stop();
  });

  it('a video of several parts is in the bucket before its download ends, then reads back byte for byte', async () => {
    const MB = 1024 * 1024;
    const video = Buffer.alloc(12 * MB);
    for (let i = 0; i < video.length; i += 4) video.writeUInt32BE(i, i);
    // The download hands over the first 6 MB, then waits until the store has begun a multipart upload with
    // those bytes in it: a store that kept the whole video before sending would wait for ever.
    let partsBeforeEnd = 0;
    const source = Readable.from(
      (async function* () {
        for (let i = 0; i < 6; i++) yield video.subarray(i * MB, (i + 1) * MB);
        for (let tries = 0; tries < 200 && partsBeforeEnd === 0; tries++) {
          const listed = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: 'store-test/' }));
          partsBeforeEnd = listed.Uploads?.length ?? 0;
          if (!partsBeforeEnd) await new Promise((r) => setTimeout(r, 50));
        }
        for (let i = 6; i < 12; i++) yield video.subarray(i * MB, (i + 1) * MB);
      })(),
      { objectMode: false },
    );
    const stored = await files.write('video_streamed', source);
    expect(partsBeforeEnd).toBe(1);
    expect(stored.bytes).toBe(video.length);
    expect(stored.name).toMatch(/^video_streamed\.[0-9a-f]{8}\.mp4$/);
    expect(await s3.keys('store-test/')).toEqual([`store-test/${stored.name}`]);

    const opened = await files.open(stored.name);
    expect(opened!.bytes).toBe(video.length);
    const chunks: Buffer[] = [];
    for await (const c of opened!.stream) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(video)).toBe(true);

    const url = await files.directUrl(stored.name, 60);
    expect(url).toMatch(new RegExp(`^${s3.endpoint}/${s3.bucket}/store-test/video_streamed\\.`));
    const res = await fetch(url!);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="video_streamed.mp4"');
    expect(res.headers.get('content-type')).toBe('video/mp4');
    expect(Buffer.from(await res.arrayBuffer()).equals(video)).toBe(true);

    await files.remove(stored.name);
    expect(await s3.keys('store-test/')).toEqual([]);
    expect(await files.open(stored.name)).toBeNull();
    await files.remove(stored.name); // already gone: fine
  }, 60_000);

  it('a download that breaks off leaves nothing in the bucket and fails the write', async () => {
    const source = Readable.from(
      (async function* () {
        yield Buffer.alloc(1024, 1);
        throw new Error('vendor connection reset');
      })(),
    );
    await expect(files.write('video_broken', source)).rejects.toThrow();
    expect((await s3.keys('store-test/')).filter((k) => k.includes('video_broken'))).toEqual([]);
  });
});
