// video.finished: one event per finished job, sent by the process that finished it, with the job's id, model,
// outcome and cost; never its prompt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { doors, type Receiver, sleep, startReceiver } from './receiver.ts';

let t: TestGateway;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestGateway({ env: { GATEWAY_VIDEO_POLL_MS: '25', GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1' }, simulator: { videoStepMs: 20 } });
  const { key } = await t.gw.keys.createManagementKey(t.walletId, 'ops');
  expect((await doors(t.url, key).createWebhook({ url: rx.url, events: ['video.finished'] })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('video.finished', () => {
  it('one event for a completed job, with its cost and no prompt', async () => {
    const res = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'a secret lighthouse at dusk', seconds: '4', size: '1280x720' });
    expect(res.status).toBe(200);
    const job = (await res.json()) as any;
    const [d] = await rx.waitFor(1, 20_000);
    expect(d!.json.type).toBe('video.finished');
    expect(d!.json.data.video).toMatchObject({ id: job.id, model: 'video-d-1', status: 'completed', error: null });
    // The cost the job shows is the cost the event tells.
    const shown = (await (await fetch(`${t.url}/v1/videos/${job.id}`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json()) as any;
    expect(d!.json.data.usage.cost_usd).toBe(shown.usage.cost_usd);
    expect(d!.json.data.usage.cost_usd).toBeGreaterThan(0);
    expect(d!.body).not.toContain('lighthouse');
    await sleep(500);
    expect(rx.received).toHaveLength(1);
  }, 40_000);
});
