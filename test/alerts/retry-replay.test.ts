// A receiver that fails first (500) then answers 200: the delivery is retried by the backoff policy and the retry
// succeeds; both attempts are recorded with their status and a bounded excerpt of the answer; a replay sends the
// same event (same id and body) again with a fresh valid signature, through the API door.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERY_POLICY } from '../../engine/alerts/policy.ts';
import { verifySignature } from '../../engine/alerts/signature.ts';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { doors, type Receiver, sleep, startReceiver } from './receiver.ts';

let t: TestGateway;
let rx: Receiver;
let api: ReturnType<typeof doors>;

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestGateway({ credits: 1_000_000, env: { GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1' } });
  const { key } = await t.gw.keys.createManagementKey(t.walletId, 'ops');
  api = doors(t.url, key);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('delivery retries and replay', () => {
  it('retries a 500 and succeeds; records each attempt; replay re-sends the event', async () => {
    const made = await api.createWebhook({ url: rx.url, events: ['balance.threshold_crossed'] });
    expect(made.status).toBe(201);
    const hook = made.json;
    expect((await api.setAlerts({ balance_percent_of_last_top_up: [], balance_credits: [999_000] })).status).toBe(200);
    rx.answers.push(500);

    const res = await post(t, '/v1/chat/completions', {
      model: 'b-4.1-mini',
      max_tokens: 2000,
      messages: [{ role: 'user', content: 'x [[sim:usage output=2000]]' }],
    });
    expect(res.status).toBe(200);
    await res.text();

    // First attempt answered 500, the retry (DELIVERY_POLICY.firstDelayMs later) 200.
    await rx.waitFor(2, 15_000);
    expect(rx.received[0]!.json.id).toBe(rx.received[1]!.json.id);
    expect(rx.received[0]!.body).toBe(rx.received[1]!.body);
    let list: any;
    for (let i = 0; i < 40; i++) {
      list = await api.deliveries(hook.id);
      if (list.json.data[0]?.state === 'delivered') break;
      await sleep(50);
    }
    expect(list.status).toBe(200);
    expect(list.json.data).toHaveLength(1);
    const d = list.json.data[0];
    expect(d.state).toBe('delivered');
    expect(d.attempts.map((a: any) => a.status_code)).toEqual([500, 200]);
    expect(d.attempts[0].response_excerpt.length).toBeLessThanOrEqual(DELIVERY_POLICY.excerptChars);
    expect(d.attempts[0].response_excerpt).toContain('failing on purpose');
    expect(d.attempts[1].response_excerpt).toBe('ok');
    const eventId = d.event_id;
    expect(eventId).toBe(rx.received[0]!.json.id);

    const replay = await api.replay(hook.id, eventId);
    expect(replay.status).toBe(202);
    await rx.waitFor(3, 10_000);
    const again = rx.received[2]!;
    expect(again.json.id).toBe(eventId);
    expect(again.body).toBe(rx.received[0]!.body);
    expect(verifySignature(made.json.secret, String(again.headers['x-gateway-signature']), again.body, Math.floor(Date.now() / 1000))).toBe(
      true,
    );
    await t.gw.alerts.worker.settled();
    const after = await api.deliveries(hook.id);
    expect(after.json.data).toHaveLength(2);
    const replayed = after.json.data.find((x: any) => x.id === replay.json.id);
    expect(replayed.replay_of).toBe(d.id);

    // Replay of an event never sent to this endpoint, or of another wallet's endpoint: 404.
    expect((await api.replay(hook.id, 'evt_nope')).status).toBe(404);
    expect((await api.replay('wh_nope', eventId)).status).toBe(404);
  }, 60_000);

  it('deleting the endpoint is audited with its URL and events, and it is listed no more', async () => {
    const list = await api.send('GET', '/v1/webhooks');
    const id = list.json.data[0].id;
    const del = await api.send('DELETE', `/v1/webhooks/${id}`);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ id, object: 'webhook', deleted: true });
    expect((await api.send('GET', '/v1/webhooks')).json.data).toEqual([]);
    const audit = await api.send('GET', '/v1/audit?action=webhook.deleted');
    expect(audit.json.data).toHaveLength(1);
    expect(audit.json.data[0].before).toEqual({ url: rx.url, events: ['balance.threshold_crossed'] });
    expect((await api.send('DELETE', `/v1/webhooks/${id}`)).status).toBe(404);
  });

  it('a normal API key is refused on the webhook doors', async () => {
    const res = await fetch(`${t.url}/v1/webhooks`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(res.status).toBe(401);
  });

  it('old events with nothing left to send are pruned, with their deliveries; one still pending is kept', async () => {
    const db = t.gw.db;
    await db.query(
      `INSERT INTO webhooks (id, wallet_id, url, events, secret, created_at) VALUES ('wh_old', $1, 'https://example.com/', '{video.finished}', 'whsec_x', now())`,
      [t.walletId],
    );
    for (const [id, state] of [
      ['evt_old_done', 'delivered'],
      ['evt_old_pending', 'pending'],
    ]) {
      await db.query(
        `INSERT INTO webhook_events (id, wallet_id, type, created_at, body) VALUES ($1, $2, 'video.finished', '2026-09-01T00:00:00Z', '{}')`,
        [id, t.walletId],
      );
      await db.query(
        `INSERT INTO webhook_deliveries (id, event_id, webhook_id, state, next_attempt_at) VALUES ($1, $2, 'wh_old', $3, now() + interval '1 day')`,
        [`dlv_${id}`, id, state],
      );
    }
    expect(await t.gw.alerts.watcher.prune()).toBe(1);
    const left = await db.query<{ id: string }>(`SELECT id FROM webhook_events WHERE id LIKE 'evt_old%'`);
    expect(left.rows.map((r) => r.id)).toEqual(['evt_old_pending']);
    expect((await db.query(`SELECT 1 FROM webhook_deliveries WHERE id = 'dlv_evt_old_done'`)).rows).toEqual([]);
  });
});
