// credits.expiring: sent once per lot that expires, when its expiry comes within the owner's lead time (14 days
// by default, PATCH /v1/alerts `credits_expiring_days`), with the credits left on the lot and the date; a lot
// further off, or without expiry, sends nothing; sweeps repeated (as every process runs them) send it once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { alertsSettled, doors, type Receiver, startReceiver } from './receiver.ts';

const DAY = 86_400_000;
const clock = fixedClock(TEST_NOW);
let t: TestGateway;
let rx: Receiver;
let api: ReturnType<typeof doors>;

const ofType = (type: string) => rx.received.filter((d) => d.json.type === type);
const inDays = (days: number) => new Date(clock.now().getTime() + days * DAY);

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestGateway({ clock, credits: 1_000, env: { GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1' } });
  const { key } = await t.gw.keys.createManagementKey(t.walletId, 'ops');
  api = doors(t.url, key);
  expect((await api.createWebhook({ url: rx.url, events: ['credits.expiring'] })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('credits.expiring', () => {
  it('once per lot within the lead time, with the amount and the date; the lead time is the owner’s', async () => {
    const soon = await t.gw.ledger.topUp(t.walletId, { credits: 500_000, expiresAt: inDays(10) });
    const far = await t.gw.ledger.topUp(t.walletId, { credits: 700_000, expiresAt: inDays(20) });
    for (let i = 0; i < 3; i++) await t.gw.alerts.watcher.sweep();
    await alertsSettled(t);
    let sent = ofType('credits.expiring');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.json.data).toMatchObject({
      lot: { id: soon.id, vendors: null },
      credits: 500_000,
      expires_at: inDays(10).toISOString(),
      expires_on: '2026-12-01',
    });

    // The owner asks for 30 days: the far lot is due too, and the first is not sent again.
    const set = await api.setAlerts({ credits_expiring_days: 30 });
    expect(set.status).toBe(200);
    expect(set.json.credits_expiring_days).toBe(30);
    expect((await api.setAlerts({ credits_expiring_days: 0 })).json.error.param).toBe('credits_expiring_days');
    await t.gw.alerts.watcher.sweep();
    await t.gw.alerts.watcher.sweep();
    await alertsSettled(t);
    sent = ofType('credits.expiring');
    expect(sent.map((d) => d.json.data.lot.id)).toEqual([soon.id, far.id]);
  }, 30_000);
});
