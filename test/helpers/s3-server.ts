// An S3-compatible server of the test's own: moto_server on a free loopback port, with one empty bucket, and
// the environment a gateway needs to use it (GATEWAY_VIDEO_STORE and the standard AWS variables).

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { CreateBucketCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { freePort } from './free-port.ts';

export interface TestS3 {
  endpoint: string;
  bucket: string;
  client: S3Client;
  /** What a gateway needs to keep its videos in this bucket under `prefix`. */
  env(prefix?: string): Record<string, string>;
  /** Keys in the bucket (all, or under a prefix). */
  keys(prefix?: string): Promise<string[]>;
  exists(key: string): Promise<boolean>;
  stop(): Promise<void>;
}

const MOTO = process.env.MOTO_SERVER || 'moto_server';
const CREDENTIALS = { accessKeyId: 'test-access-key', secretAccessKey: 'test-secret-key' };
const REGION = 'us-east-1';

/** Whether moto_server can be started here, and why not. */
export const s3Availability: { ok: boolean; reason: string } = (() => {
  const probe = spawnSync('sh', ['-c', `command -v ${MOTO}`], { encoding: 'utf8' });
  return probe.status === 0 ? { ok: true, reason: '' } : { ok: false, reason: `${MOTO} is not installed` };
})();

export async function startTestS3(bucket = 'gateway-videos'): Promise<TestS3> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(MOTO, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const client = new S3Client({ region: REGION, endpoint, forcePathStyle: true, credentials: CREDENTIALS });
  const stop = async () => {
    client.destroy();
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await untilAnswering(endpoint, () => child.exitCode !== null);
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (e) {
    await stop();
    throw new Error(`moto_server did not start: ${(e as Error).message}\n${output}`);
  }
  return {
    endpoint,
    bucket,
    client,
    env: (prefix) => ({
      GATEWAY_VIDEO_STORE: `s3://${bucket}${prefix ? `/${prefix}` : ''}`,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      AWS_REGION: REGION,
      AWS_ENDPOINT_URL_S3: endpoint,
    }),
    async keys(prefix) {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, ...(prefix ? { Prefix: prefix } : {}) }));
      return (listed.Contents ?? []).map((o) => o.Key!);
    },
    async exists(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return true;
      } catch (e) {
        if ((e as { name?: string }).name === 'NotFound') return false;
        throw e;
      }
    },
    stop,
  };
}

async function untilAnswering(endpoint: string, died: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (died()) throw new Error('it exited');
    try {
      await fetch(endpoint);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`nothing answered on ${endpoint} within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
