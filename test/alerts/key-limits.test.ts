// Key limits: a key's monthly 80% and 100% thresholds each fire exactly once as its use passes them (calls whose
// usage comes back above their hold push the use past the limit); a daily limit crossed past both thresholds
// by one call sends both events, once. A key expiring within 7 days sends key.expiring once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { alertsSettled, doors, type Receiver, startReceiver } from './receiver.ts';

let t: TestGateway;
let rx: Receiver;
let api: ReturnType<typeof doors>;

/** One call charged 32,000 credits (20,000 output tokens × $1.6/M) while holding little (max_tokens 10). */
const bigCall = (key: string, i: number) =>
  fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'b-4.1-mini',
      max_tokens: 10,
      messages: [{ role: 'user', content: `call ${i} [[sim:usage output=20000]]` }],
    }),
  }).then(async (r) => (await r.text(), r.status));

const settled = () => alertsSettled(t);

const ofType = (type: string) => rx.received.filter((d) => d.json.type === type);

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestGateway({ credits: 10_000_000, env: { GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1' } });
  const { key } = await t.gw.keys.createManagementKey(t.walletId, 'ops');
  api = doors(t.url, key);
  const made = await api.createWebhook({
    url: rx.url,
    events: [
      'key.monthly_limit_threshold_crossed',
      'key.daily_limit_threshold_crossed',
      'key.expiring',
      'key_group.monthly_limit_threshold_crossed',
    ],
  });
  expect(made.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('key limit thresholds', () => {
  it('monthly 80% and 100% fire once each', async () => {
    const k = await t.gw.keys.createApiKey(t.walletId, { name: 'class', monthlyLimitCredits: 100_000 });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push(await bigCall(k.key, i));
      await settled();
    }
    // 32k, 64k, 96k (80% passed), 128k (100% passed); then the month is closed to it.
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    expect(statuses.slice(4)).toEqual([429, 429]);
    const monthly = ofType('key.monthly_limit_threshold_crossed');
    expect(monthly.map((d) => d.json.data.threshold.percent)).toEqual([80, 100]);
    expect(monthly[0]!.json.data.key.id).toBe(k.id);
    expect(monthly[0]!.json.data.limit_credits).toBe(100_000);
    expect(monthly[0]!.json.data.used_credits).toBeGreaterThanOrEqual(80_000);
    expect(monthly[1]!.json.data.used_credits).toBeGreaterThanOrEqual(100_000);
    expect(monthly[0]!.json.data.period).toBe('2026-11');
    expect(JSON.stringify(monthly)).not.toContain(k.key); // the key's text never

    // The limit raised to 200,000 (use 128,000 = 64%): the thresholds are armed again, and 80% fires once more.
    const raised = await api.send('PATCH', `/v1/keys/${k.id}`, { monthly_limit_credits: 200_000 });
    expect(raised.status).toBe(200);
    expect(await bigCall(k.key, 20)).toBe(200); // 160,000: 80%
    await settled();
    expect(await bigCall(k.key, 21)).toBe(200); // 192,000: still below 100%
    await settled();
    const after = ofType('key.monthly_limit_threshold_crossed');
    expect(after.map((d) => d.json.data.threshold.percent)).toEqual([80, 100, 80]);
    expect(after[2]!.json.data.limit_credits).toBe(200_000);
  }, 60_000);

  it("a key group's monthly 80% and 100% fire once each, from the sum of its keys' use", async () => {
    const g = await api.send('POST', '/v1/key-groups', { name: '3-2', monthly_limit_credits: 100_000 });
    expect(g.status).toBe(201);
    const group = g.json as { id: string };
    const made = await api.send('POST', '/v1/keys', { count: 2, name_prefix: 'pupil', group_id: group.id });
    const [a, b] = (made.json as { data: { key: string }[] }).data.map((k) => k.key);
    for (const [i, key] of [a, b, a, b].entries()) {
      expect(await bigCall(key!, 30 + i)).toBe(200); // 32k, 64k, 96k (80% passed), 128k (100% passed)
      await settled();
    }
    const crossed = ofType('key_group.monthly_limit_threshold_crossed');
    expect(crossed.map((d) => d.json.data.threshold.percent)).toEqual([80, 100]);
    expect(crossed[0]!.json.data.key_group).toEqual({ id: group.id, name: '3-2' });
    expect(crossed[1]!.json.data.used_credits).toBeGreaterThanOrEqual(100_000);
  }, 60_000);

  it('a daily limit passed by one call sends 80% and 100% once each', async () => {
    const k = await t.gw.keys.createApiKey(t.walletId, { name: 'daily', dailyLimitCredits: 50_000 });
    for (let i = 0; i < 3; i++) {
      await bigCall(k.key, 10 + i);
      await settled();
    }
    const daily = ofType('key.daily_limit_threshold_crossed').filter((d) => d.json.data.key.id === k.id);
    expect(daily.map((d) => d.json.data.threshold.percent).sort()).toEqual([100, 80]);
    expect(daily[0]!.json.data.period).toBe('2026-11-21');
  }, 60_000);

  it('key.expiring once for a key expiring within 7 days', async () => {
    const k = await t.gw.keys.createApiKey(t.walletId, { name: 'ending', expiresOn: '2026-11-25' });
    await t.gw.keys.createApiKey(t.walletId, { name: 'later', expiresOn: '2026-12-25' });
    await t.gw.alerts.watcher.sweep();
    await t.gw.alerts.watcher.sweep();
    await settled();
    const expiring = ofType('key.expiring');
    expect(expiring).toHaveLength(1);
    expect(expiring[0]!.json.data.key.id).toBe(k.id);
    expect(expiring[0]!.json.data.usable_until).toBe('2026-11-25');
    expect(expiring[0]!.json.data.expires_at).toBe('2026-11-25T15:00:00.000Z');
  }, 30_000);
});
