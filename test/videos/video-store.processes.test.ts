// Videos across hosts that share no disk: two gateway processes on one PostgreSQL, each with a data folder of
// its own, keeping videos in one S3-compatible bucket (moto_server, started here). A video made through one
// downloads through the other (the presigned redirect followed) with the vendor's bytes, still does after the
// first stops; DELETE through either removes the object, and retention removes it from a process that never
// held the file. Without a shared store (each process's own GATEWAY_DATA_DIR/videos), a process that cannot read the
// file says so, 503 naming GATEWAY_VIDEO_STORE, rather than blaming expiry; an expired file is still "no longer stored".
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { fakeMp4 } from '../../simulator/media.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { s3Availability, startTestS3, type TestS3 } from '../helpers/s3-server.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const postgresRuns = postgresAvailability.ok || REQUIRE_POSTGRES;
const canRun = postgresRuns && s3Availability.ok;
if (!s3Availability.ok) console.log(`skipping videos across processes: ${s3Availability.reason}`);
const PREFIX = 'shared';

let pgSchema: TestPostgres;
let sim: Simulator;
let s3: TestS3;
let apiKey: string;
const children: ChildGateway[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A gateway process on the suite's PostgreSQL: videos in the shared bucket, or (`own-folder`) in its data folder. */
function gateway(store: 's3' | 'own-folder' = 's3'): Promise<ChildGateway> {
  const env: Record<string, string> = {
    DATABASE_URL: pgSchema.url,
    GATEWAY_SIMULATE: '0',
    GATEWAY_VIDEO_POLL_MS: '100',
    LOG_LEVEL: 'warn',
    ...(store === 's3' ? s3.env(PREFIX) : {}),
  };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  return startChildGateway(env, { apiKey }).then((c) => (children.push(c), c));
}

const call = (g: ChildGateway, path: string, init: RequestInit = {}) =>
  fetch(`${g.base}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${apiKey}`, ...(init.body ? { 'content-type': 'application/json' } : {}) },
  });

async function createVideo(g: ChildGateway, prompt: string): Promise<string> {
  const res = await call(g, '/v1/videos', {
    method: 'POST',
    body: JSON.stringify({ model: 'video-d-1', prompt, seconds: '2', size: '854x480' }),
  });
  const body = (await res.json()) as { id: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.id;
}

async function completed(g: ChildGateway, id: string): Promise<void> {
  for (const until = Date.now() + 30_000; Date.now() < until; await sleep(50)) {
    const job = (await (await call(g, `/v1/videos/${id}`)).json()) as { status: string; error: unknown };
    if (job.status === 'completed') return;
    if (job.status === 'failed') throw new Error(`video ${id} failed: ${JSON.stringify(job.error)}`);
  }
  throw new Error(`video ${id} not completed within 30 s`);
}

async function download(g: ChildGateway, id: string): Promise<{ status: number; bytes: Buffer }> {
  const res = await call(g, `/v1/videos/${id}/content`); // fetch follows the redirect to the bucket
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
}

async function objectKey(id: string): Promise<string> {
  const row = await pgSchema.db.query<{ file_name: string }>('SELECT file_name FROM video_jobs WHERE id = $1', [id]);
  return `${PREFIX}/${row.rows[0]!.file_name}`;
}

beforeAll(async () => {
  if (!postgresRuns) return;
  [pgSchema, sim] = await Promise.all([openTestPostgres({ migrate: true }), startSimulator({ videoStepMs: 100 })]);
  if (canRun) s3 = await startTestS3();
  const wallet = await createLedger(pgSchema.db, { clock: systemClock }).createWallet({ credits: 100_000_000 });
  const keys = createKeyService(pgSchema.db, { clock: systemClock });
  apiKey = (await keys.createApiKey(wallet.id, { name: 'videos' })).key;
  await keys.close();
}, 60_000);

// Each test's processes stop with it: a worker left running on the database would deliver the next test's jobs
// into its own store.
afterEach(() => {
  for (const c of children.splice(0)) c.remove();
});

afterAll(async () => {
  await sim?.close();
  await s3?.stop();
  await pgSchema?.cleanup();
});

describe.skipIf(!canRun)('videos across processes with data folders of their own [postgres, s3]', () => {
  it('made through one, downloaded through the other and after the first stops; delete and retention remove the object from any process', async () => {
    const a = await gateway();
    const [kept, deletedThroughA, expiring] = await Promise.all(['kept', 'deleted through a', 'expiring'].map((p) => createVideo(a, p)));
    for (const id of [kept, deletedThroughA, expiring]) await completed(a, id!);
    const keys = await Promise.all([kept, deletedThroughA, expiring].map((id) => objectKey(id!)));
    expect((await s3.keys(`${PREFIX}/`)).sort()).toEqual([...keys].sort());
    // Seven days on for one of them; b, started after a delivered them all, never held a file.
    await pgSchema.db.query(`UPDATE video_jobs SET expires_at = now() - interval '1 second' WHERE id = $1`, [expiring]);
    const b = await gateway();
    expect(a.dataDir).not.toBe(b.dataDir);

    // The content door sends the client to the bucket, not to the process that stored the file.
    const redirect = await call(b, `/v1/videos/${kept}/content`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toMatch(
      new RegExp(`^${s3.endpoint}/${s3.bucket}/${keys[0]!.replace(/\./g, '\\.')}\\?.*X-Amz-Expires=300`),
    );
    const expected = fakeMp4();
    for (const g of [b, a]) expect(await download(g, kept!)).toEqual({ status: 200, bytes: expected });

    // The retention sweep of b's first round.
    for (const until = Date.now() + 20_000; Date.now() < until && (await s3.exists(keys[2]!)); ) await sleep(100);
    expect(await s3.exists(keys[2]!)).toBe(false);
    const swept = await pgSchema.db.query<{ file_deleted_at: Date | null }>('SELECT file_deleted_at FROM video_jobs WHERE id = $1', [
      expiring,
    ]);
    expect(swept.rows[0]!.file_deleted_at).not.toBeNull();
    expect((await call(b, `/v1/videos/${expiring}/content`)).status).toBe(404);

    expect((await call(a, `/v1/videos/${deletedThroughA}`, { method: 'DELETE' })).status).toBe(200);
    expect(await s3.exists(keys[1]!)).toBe(false);
    expect((await call(b, `/v1/videos/${deletedThroughA}/content`)).status).toBe(404);

    a.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(await download(b, kept!)).toEqual({ status: 200, bytes: expected });
    expect((await call(b, `/v1/videos/${kept}`, { method: 'DELETE' })).status).toBe(200);
    expect(await s3.exists(keys[0]!)).toBe(false);
    expect(await s3.keys(`${PREFIX}/`)).toEqual([]);
  }, 120_000);
});

describe.skipIf(!postgresRuns)('videos across processes with data folders of their own and no shared store [postgres]', () => {
  it("answers 503 naming GATEWAY_VIDEO_STORE where a process cannot read another's file, warns once, and keeps 404 for an expired file", async () => {
    const a = await gateway('own-folder');
    const [kept, expiring] = await Promise.all(['kept on a', 'expiring on a'].map((p) => createVideo(a, p)));
    for (const id of [kept, expiring]) await completed(a, id!);
    // Started once a delivered both, so every file is in a's folder.
    const b = await gateway('own-folder');

    // b sends the client to its own file door, which cannot find a file a stored in its own folder.
    const redirect = await call(b, `/v1/videos/${kept}/content`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toMatch(new RegExp(`^/v1/videos/${kept}/file\\?token=`));
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${b.base}${redirect.headers.get('location')}`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { type: string; message: string } };
      expect(body.error.type).toBe('api_error');
      expect(body.error.message).toContain('cannot read it');
      expect(body.error.message).toContain('GATEWAY_VIDEO_STORE');
      expect(body.error.message).not.toContain('no longer stored');
    }
    await b.waitFor(/not in this process's video store/);
    expect(b.out.text.match(/not in this process's video store/g)).toHaveLength(1);
    // The process that stored it serves it.
    expect(await download(a, kept!)).toEqual({ status: 200, bytes: fakeMp4() });

    // A file past its expiry is not there for any process, and is told so.
    await pgSchema.db.query(`UPDATE video_jobs SET expires_at = now() - interval '1 second' WHERE id = $1`, [expiring]);
    const expired = await call(b, `/v1/videos/${expiring}/content`);
    expect(expired.status).toBe(404);
    expect(((await expired.json()) as { error: { message: string } }).error.message).toContain('is no longer stored');
  }, 120_000);
});
