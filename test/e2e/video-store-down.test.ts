// A video store that is down (GATEWAY_VIDEO_STORE=s3://… with nothing answering at its endpoint): the finished
// video cannot be stored, so after `deliver_attempts` tries the job is failed `undelivered` and nothing is
// charged; never a charge without a file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { post, sleep } from './e2e.ts';

const lines: string[] = [];
let t: TestGateway;
beforeAll(async () => {
  const deadPort = await freePort();
  t = await startTestGateway({
    env: {
      GATEWAY_VIDEO_POLL_MS: '25',
      GATEWAY_VIDEO_STORE: 's3://gateway-videos/down',
      AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${deadPort}`,
      AWS_ACCESS_KEY_ID: 'id',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_REGION: 'us-east-1',
    },
    simulator: { videoStepMs: 100 },
    logger: { level: 'warn', stream: { write: (l) => void lines.push(l) } },
  });
});
afterAll(() => t?.close());

describe('a video store that is down', () => {
  it('leaves the job failed undelivered after the configured attempts, with nothing charged or held', async () => {
    const attempts = t.gw.runtime.snapshot().config.videos.deliver_attempts;
    expect(attempts).toBeGreaterThan(1);
    const before = await t.balance();
    const res = await post(t, '/v1/videos', {
      model: 'video-d-2',
      prompt: 'a lighthouse [[sim:cost=0.70]]',
      seconds: '5',
      size: '1280x720',
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    let job: any;
    for (const until = Date.now() + 30_000; Date.now() < until; await sleep(25)) {
      job = await (await fetch(`${t.url}/v1/videos/${id}`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json();
      if (job.status === 'completed' || job.status === 'failed') break;
    }
    expect(job.status).toBe('failed');
    expect(job.error).toEqual({ code: 'undelivered', message: 'The finished video could not be stored by the gateway.' });
    expect(job.usage.cost_usd).toBe(0);
    expect(await t.balance()).toBe(before);
    expect(await t.held()).toBe(0n);
    const refusals = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'video store refused a video' && l.video === id);
    expect(refusals.map((l) => l.attempt)).toEqual(Array.from({ length: attempts }, (_, i) => i + 1));
    expect(refusals[0].store).toBe('s3://gateway-videos/down');
    const content = await fetch(`${t.url}/v1/videos/${id}/content`, {
      headers: { authorization: `Bearer ${t.apiKey}` },
      redirect: 'manual',
    });
    expect(content.status).toBe(404);
  }, 45_000);
});
