// Attack (wt-attack): a video job whose vendor charge is far above its hold (seconds × price per second). The
// vendor's charge is debited exactly "as far as the wallet goes" and, like text usage above the hold, must count
// on the key's limits in full; the wallet never goes below zero and the journal adds up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ credits: 1_000_000, env: { GATEWAY_VIDEO_POLL_MS: '25' }, simulator: { videoStepMs: 150 } });
});
afterAll(() => t?.close());

async function finished(key: string, id: string): Promise<any> {
  const until = Date.now() + 10_000;
  for (;;) {
    const job = (await (await fetch(`${t.url}/v1/videos/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
    if (job.status === 'completed' || job.status === 'failed' || Date.now() > until) return job;
    await sleep(25);
  }
}

describe('video charge above its hold', () => {
  it('is debited in full when the wallet covers it and counted on the key', async () => {
    const { key } = await t.gw.keys.createApiKey(t.walletId, { name: 'vid', monthlyLimitCredits: 500_000 });
    const before = await t.balance();
    // Held 1 s × $0.05 (480p, video-d-1); the vendor reports $0.30.
    const res = await post({ ...t, apiKey: key }, '/v1/videos', {
      model: 'video-d-1',
      prompt: 'x [[sim:cost=0.3]]',
      seconds: '1',
      size: '854x480',
    });
    const job = (await res.json()) as any;
    expect(res.status, JSON.stringify(job)).toBe(200);
    const done = await finished(key, job.id);
    await sleep(200);
    const spent = before - (await t.balance());
    const k = (await (await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
    console.log({
      status: done.status,
      usage: done.usage,
      spent: String(spent),
      monthUsed: k.month.used_credits,
      held: String(await t.held()),
    });
    expect(done.status).toBe('completed');
    expect(spent).toBe(300_000_000n);
    expect(k.month.used_credits).toBe(300_000);
    expect(await t.held()).toBe(0n);
    await expectJournalAddsUp(t.gw.db, t.walletId);
  }, 30_000);

  it('is debited as far as the wallet goes, never below zero', async () => {
    const left = await t.balance();
    const { key } = await t.gw.keys.createApiKey(t.walletId, { name: 'vid2' });
    const res = await post({ ...t, apiKey: key }, '/v1/videos', {
      model: 'video-d-1',
      prompt: 'x [[sim:cost=5]]',
      seconds: '1',
      size: '854x480',
    });
    const job = (await res.json()) as any;
    expect(res.status, JSON.stringify(job)).toBe(200);
    const done = await finished(key, job.id);
    await sleep(200);
    const after = await t.balance();
    console.log({ left: String(left), after: String(after), usage: done.usage, status: done.status });
    expect(after).toBeGreaterThanOrEqual(0n);
    expect(after).toBe(0n);
    await expectJournalAddsUp(t.gw.db, t.walletId);
  }, 30_000);
});
