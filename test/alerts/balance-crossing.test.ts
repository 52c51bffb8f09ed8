// A wallet drained across a balance threshold by 50 calls at once: the owner's receiver gets exactly one signed
// event for the crossing, verifiable with the secret shown once at creation; a top-up lifts it back above, the
// next drain sends exactly one more. The settings and the endpoint are in the audit trail, the secret nowhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../engine/alerts/signature.ts';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { alertsSettled, doors, type Receiver, startReceiver } from './receiver.ts';

let t: TestGateway;
let rx: Receiver;
let api: ReturnType<typeof doors>;

const CREDITS = 1_000_000; // $1
const drainCall = (i: number) =>
  post(t, '/v1/chat/completions', {
    model: 'b-4.1-mini',
    max_tokens: 10_000,
    messages: [{ role: 'user', content: `drain ${i} [[sim:usage output=10000]]` }], // 10,000 × $1.6/M = 16,000 credits
  }).then(async (r) => (await r.text(), r.status));

const settled = () => alertsSettled(t);

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestGateway({ credits: CREDITS, env: { GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1' } });
  const { key } = await t.gw.keys.createManagementKey(t.walletId, 'ops');
  api = doors(t.url, key);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('balance threshold crossing', () => {
  let secret: string;

  it('registers an endpoint, shows its secret once, and records it (never the secret) in the audit trail', async () => {
    const made = await api.createWebhook({ url: rx.url, events: ['balance.threshold_crossed'] });
    expect(made.status).toBe(201);
    expect(made.json.secret).toMatch(/^whsec_/);
    secret = made.json.secret;
    const list = await api.send('GET', '/v1/webhooks');
    expect(list.json.data).toHaveLength(1);
    expect(list.json.data[0].secret).toBeUndefined();
    expect(JSON.stringify(list.json)).not.toContain(secret);

    const set = await api.setAlerts({ balance_percent_of_last_top_up: [50], balance_credits: [] });
    expect(set.status).toBe(200);
    expect(set.json.balance_percent_of_last_top_up).toEqual([50]);

    const audit = await api.send('GET', '/v1/audit');
    const actions = audit.json.data.map((e: any) => e.action);
    expect(actions).toContain('webhook.created');
    expect(actions).toContain('alerts.changed');
    const changed = audit.json.data.find((e: any) => e.action === 'alerts.changed');
    expect(changed.before.balance_percent_of_last_top_up).toEqual([20, 5]);
    expect(changed.after.balance_percent_of_last_top_up).toEqual([50]);
    expect(changed.actor.kind ?? changed.actor_kind).toBe('management_key');
    expect(JSON.stringify(audit.json)).not.toContain(secret);
  });

  it('50 calls at once across the threshold: exactly one signed event', async () => {
    const statuses = await Promise.all(Array.from({ length: 50 }, (_, i) => drainCall(i)));
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(32); // at least 32 × 16,000 credits: past 50% of 1,000,000
    await settled();
    expect(rx.received).toHaveLength(1);
    const d = rx.received[0]!;
    expect(d.json.type).toBe('balance.threshold_crossed');
    expect(d.json.wallet_id).toBe(t.walletId);
    expect(d.json.id).toMatch(/^evt_/);
    // The shipped billing.yaml shows money in won (1,400 a dollar): each amount of credits has its money beside it.
    expect(d.json.data.threshold).toEqual({ percent_of_last_top_up: 50, credits: 500_000, money: '₩700 · $0.50' });
    expect(d.json.data.balance_credits).toBeLessThanOrEqual(500_000);
    expect(d.json.data.balance_money).toMatch(/^₩[\d,]+ · \$0\.\d\d$/);
    expect(d.json.data.last_top_up_money).toBe('₩1,400 · $1.00');
    expect(JSON.stringify(d.json)).not.toContain('drain'); // no prompt text in events
    const header = String(d.headers['x-gateway-signature']);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(secret, header, d.body, Math.floor(Date.now() / 1000))).toBe(true);
    expect(verifySignature('whsec_wrong', header, d.body, Math.floor(Date.now() / 1000))).toBe(false);
    expect(verifySignature(secret, header, `${d.body} `, Math.floor(Date.now() / 1000))).toBe(false);
  }, 60_000);

  it('more calls while below fire nothing more', async () => {
    await Promise.all(Array.from({ length: 5 }, (_, i) => drainCall(100 + i)));
    await settled();
    expect(rx.received).toHaveLength(1);
  }, 30_000);

  it('a top-up lifts it above; the next drain across the threshold sends exactly one more', async () => {
    const top = await fetch(`${t.url}/admin/v1/wallets/${t.walletId}/credits`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-admin-token', 'content-type': 'application/json' },
      body: JSON.stringify({ credits: CREDITS }),
    });
    expect(top.status).toBe(201);
    await settled();
    expect(rx.received).toHaveLength(1);
    // Balance is now above 50% of the last top-up (1,000,000); drain past 500,000 again.
    for (let round = 0; round < 3 && rx.received.length < 2; round++) {
      await Promise.all(Array.from({ length: 50 }, (_, i) => drainCall(200 + round * 50 + i)));
      await settled();
    }
    expect(rx.received).toHaveLength(2);
    expect(rx.received[1]!.json.type).toBe('balance.threshold_crossed');
    expect(rx.received[1]!.json.id).not.toBe(rx.received[0]!.json.id);
    expect(
      verifySignature(secret, String(rx.received[1]!.headers['x-gateway-signature']), rx.received[1]!.body, Math.floor(Date.now() / 1000)),
    ).toBe(true);
  }, 90_000);

  it("a top-up written beside the gateway (not through it): re-armed by the sweep or the drain's first checks, one more after the next drain", async () => {
    await t.gw.ledger.topUp(t.walletId, { credits: CREDITS }); // the ledger itself: the gateway's top-up hook does not see it
    await t.gw.alerts.watcher.sweep();
    await settled();
    expect(rx.received).toHaveLength(2);
    for (let round = 0; round < 3 && rx.received.length < 3; round++) {
      await Promise.all(Array.from({ length: 50 }, (_, i) => drainCall(500 + round * 50 + i)));
      await settled();
    }
    expect(rx.received).toHaveLength(3);
  }, 90_000);
});
