// /healthz, /readyz and /metrics over real HTTP: the series a scrape shows after a chat call, a 402 and a
// fallback; readiness that fails when the database is gone; metrics refused without the token when one is set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { METRICS_OPEN_TO_LOOPBACK, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { series } from '../helpers/metrics-text.ts';

let t: TestGateway;
beforeAll(async () => {
  // A fast video poll and vendor, as the other video tests run: at the default 5 s poll a job was claimed up to
  // 10 s after its submission, past the test's wait, in one run of three.
  t = await startTestGateway({ env: { ...METRICS_OPEN_TO_LOOPBACK, GATEWAY_VIDEO_POLL_MS: '25' }, simulator: { videoStepMs: 20 } });
});
afterAll(() => t?.close());

const USER = [{ role: 'user', content: 'Hello metrics' }];

describe('health and readiness', () => {
  it('/healthz and /readyz answer 200 while the gateway serves', async () => {
    const health = await fetch(`${t.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${t.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', catalog_version: 1 });
  });
});

describe('/metrics', () => {
  it('shows requests, latency, charge, fallbacks and refusals after a chat call, a fallback and a 402', async () => {
    const ok = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER });
    expect(ok.status).toBe(200);
    t.sim.inject('b0', { kind: 'status', status: 500 });
    const fellBack = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER });
    expect(fellBack.headers.get('x-gateway-fallback-depth')).toBe('1');
    const poor = await t.gw.ledger.createWallet({ credits: 0 });
    const { key } = await t.gw.keys.createApiKey(poor.id, { name: 'poor' });
    const refused = await post(t, '/v1/chat/completions', { model: 'b-5', messages: USER }, { authorization: `Bearer ${key}` });
    expect(refused.status).toBe(402);

    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(series(text, 'gateway_requests_total', { door: 'chat', model: 'b-5', vendor: 'b', status: '200' })).toBe(2);
    expect(series(text, 'gateway_requests_total', { door: 'chat', model: 'b-5', vendor: 'b', status: '402' })).toBe(1);
    expect(series(text, 'gateway_route_failures_total', { route: 'b0' })).toBe(1);
    expect(series(text, 'gateway_reservation_refusals_total', { status: '402' })).toBe(1);
    expect(series(text, 'gateway_request_duration_seconds_count', { door: 'chat' })).toBe(3);
    expect(series(text, 'gateway_time_to_first_byte_seconds_count', { door: 'chat' })).toBe(3);
    const charged = series(text, 'gateway_charged_nano_usd_total', { vendor: 'b' }) ?? 0;
    const spent = 100_000_000n * 1000n - (await t.balance());
    expect(charged).toBe(Number(spent));
    expect(charged).toBeGreaterThan(0);
    expect(series(text, 'gateway_holds_in_flight')).toBe(0);
    expect(series(text, 'gateway_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1);
    expect(series(text, 'gateway_catalog_version')).toBe(1);
    expect(series(text, 'gateway_last_reload_ok')).toBe(1);
  });

  it('names a video job by door, model and vendor, counts its refusal, and counts its charge once the worker settles it', async () => {
    const before = await (await fetch(`${t.url}/metrics`)).text();
    const chargedBefore = series(before, 'gateway_charged_nano_usd_total', { vendor: 'd' }) ?? 0;
    const refusedBefore = series(before, 'gateway_reservation_refusals_total', { status: '402' }) ?? 0;
    const res = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'a cat [[sim:cost=0.123]]', seconds: '4' });
    expect(res.status).toBe(200);
    const video = (await res.json()) as { id: string };
    const poor = await t.gw.ledger.createWallet({ credits: 0 });
    const { key } = await t.gw.keys.createApiKey(poor.id, { name: 'poor video' });
    const refused = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'x', seconds: '4' }, { authorization: `Bearer ${key}` });
    expect(refused.status).toBe(402);
    for (let i = 0; ; i++) {
      const job = await fetch(`${t.url}/v1/videos/${video.id}`, { headers: { authorization: `Bearer ${t.apiKey}` } });
      if (((await job.json()) as { status: string }).status === 'completed') break;
      if (i > 400) throw new Error('the video did not complete');
      await new Promise((r) => setTimeout(r, 20));
    }
    // The charge is counted as the worker finishes the job, just after the job reads as completed.
    let text = '';
    for (let i = 0; i < 100; i++) {
      text = await (await fetch(`${t.url}/metrics`)).text();
      if ((series(text, 'gateway_charged_nano_usd_total', { vendor: 'd' }) ?? 0) > chargedBefore) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(series(text, 'gateway_requests_total', { door: 'videos', model: 'video-d-1', vendor: 'd', status: '200' })).toBe(1);
    expect(series(text, 'gateway_requests_total', { door: 'videos', model: 'video-d-1', vendor: 'd', status: '402' })).toBe(1);
    expect(series(text, 'gateway_reservation_refusals_total', { status: '402' })).toBe(refusedBefore + 1);
    expect(series(text, 'gateway_charged_nano_usd_total', { vendor: 'd' })).toBe(chargedBefore + 123_000_000);
  });

  it('counts reloads and shows the new catalog version', async () => {
    const res = await fetch(`${t.url}/admin/v1/reload`, { method: 'POST', headers: { authorization: 'Bearer test-admin-token' } });
    expect(res.status).toBe(200);
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(series(text, 'gateway_reloads_total', { result: 'ok' })).toBe(1);
    expect(series(text, 'gateway_catalog_version')).toBe(2);
  });
});

describe('a metrics token', () => {
  it('when set, /metrics needs it even from loopback; health and readiness stay open', async () => {
    const g = await startTestGateway({ env: { GATEWAY_METRICS_TOKEN: 'scrape-me' } });
    try {
      const without = await fetch(`${g.url}/metrics`);
      expect(without.status).toBe(403);
      expect(((await without.json()) as any).error.type).toBeDefined();
      const wrong = await fetch(`${g.url}/metrics`, { headers: { authorization: 'Bearer nope' } });
      expect(wrong.status).toBe(403);
      const right = await fetch(`${g.url}/metrics`, { headers: { authorization: 'Bearer scrape-me' } });
      expect(right.status).toBe(200);
      expect(await right.text()).toContain('gateway_requests_total');
      expect((await fetch(`${g.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${g.url}/readyz`)).status).toBe(200);
    } finally {
      await g.close();
    }
  });
});

describe('readiness without a database', () => {
  it('/readyz is 503 in the chat error shape once the database is closed; /healthz stays 200', async () => {
    const g = await startTestGateway();
    try {
      await g.gw.db.close();
      const ready = await fetch(`${g.url}/readyz`);
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as any;
      expect(body.error.message).toMatch(/database/);
      expect((await fetch(`${g.url}/healthz`)).status).toBe(200);
    } finally {
      await g.close().catch(() => undefined);
    }
  });
});
