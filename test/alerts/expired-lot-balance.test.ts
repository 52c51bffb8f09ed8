// The balance that balance alerts compare leaves an expired lot's remainder out from its expires_at on, as every
// view does (engine/money/spendable.ts), not only once the expiry pass has moved it: a wallet whose term money
// lapsed is told it is low at once. The gateway's clock is moved by hand; the pass (every 30 s at most) has not run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { alertsSettled, doors, type Receiver, startReceiver } from './receiver.ts';

const DAY = 86_400_000;
const clock = fixedClock(TEST_NOW);
let t: TestGateway;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestGateway({ clock, credits: 1_000_000, env: { GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1' } });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('balance alerts and lots that expire', () => {
  it("a lot's remainder stops counting in the alert's balance at its expires_at, before the expiry pass", async () => {
    const api = doors(t.url, (await t.gw.keys.createManagementKey(t.walletId, 'ops')).key);
    expect((await api.createWebhook({ url: rx.url, events: ['balance.threshold_crossed'] })).status).toBe(201);
    expect((await api.setAlerts({ balance_percent_of_last_top_up: [], balance_credits: [1_500_000] })).status).toBe(200);
    const expiresAt = new Date(Date.parse(TEST_NOW) + DAY);
    const term = await fetch(`${t.url}/admin/v1/wallets/${t.walletId}/credits`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
      body: JSON.stringify({ credits: 1_000_000, expires_at: expiresAt.toISOString() }),
    });
    expect(term.status).toBe(201);

    // 2,000,000 credits: above the threshold.
    await t.gw.alerts.watcher.check(t.walletId, []);
    await alertsSettled(t);
    expect(rx.received).toHaveLength(0);

    // At expires_at only 1,000,000 are the wallet's: crossed, though no pass has moved the term's money yet.
    clock.set(expiresAt);
    const lot = await t.gw.db.query<{ expired_nano: string }>(`SELECT expired_nano::text FROM credit_lots WHERE expires_at IS NOT NULL`);
    expect(lot.rows.map((r) => r.expired_nano)).toEqual(['0']);
    await t.gw.alerts.watcher.check(t.walletId, []);
    await alertsSettled(t);
    expect(rx.received).toHaveLength(1);
    expect(rx.received[0]!.json).toMatchObject({ type: 'balance.threshold_crossed', data: { balance_credits: 1_000_000 } });
  });
});
