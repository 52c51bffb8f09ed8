// The owner's alerts page: thresholds saved from a form, a webhook added (its secret shown once, not after a
// refresh), refused for a loopback URL without the allow setting, its deliveries listed, replayed and deleted,
// each change in the audit trail as the owner.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../engine/alerts/signature.ts';
import { type OwnerClient, signIn } from '../dashboard/owner-client.ts';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type Receiver, sleep, startReceiver } from './receiver.ts';

let t: TestGateway;
let rx: Receiver;
let owner: OwnerClient;

beforeAll(async () => {
  rx = await startReceiver();
  t = await startTestGateway({ credits: 1_000_000, env: { GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1' } });
  owner = await signIn(t, t.walletId);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('/dashboard/webhooks', () => {
  it('saves thresholds, adds a webhook showing its secret once, lists deliveries, replays and deletes', async () => {
    const page = await owner.get('/dashboard/webhooks');
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).toContain('value="20, 5"'); // the defaults

    const saved = await owner.follow(
      await owner.post('/dashboard/webhooks/thresholds', {
        balance_percent_of_last_top_up: '',
        balance_credits: '999000',
        key_monthly_limit_percent: '80, 100',
        key_daily_limit_percent: '',
      }),
    );
    expect(await saved.text()).toContain('The thresholds were saved.');
    const bad = await owner.post('/dashboard/webhooks/thresholds', { balance_credits: 'lots' });
    expect(bad.status).toBe(400);
    // Balance thresholds typed as money (the shipped display currency is won): the groups' commas stay in each number.
    const typed = await owner.post('/dashboard/webhooks/thresholds', { balance_credits: '₩14,000, $5,1,000,000 7000원' });
    expect(typed.status, await typed.clone().text()).toBe(303);
    const stored = await t.gw.db.query<{ c: string[] }>('SELECT balance_credits::text[] AS c FROM alert_settings WHERE wallet_id = $1', [
      t.walletId,
    ]);
    expect(stored.rows[0]!.c.map(Number).sort((a, b) => a - b)).toEqual([1_000_000, 5_000_000, 10_000_000]); // $5 and 7000원 are one threshold
    // Back to the one threshold the rest of this test crosses.
    expect((await owner.post('/dashboard/webhooks/thresholds', { balance_credits: '999000' })).status).toBe(303);

    const added = await owner.post('/dashboard/webhooks', { url: rx.url, 'event:balance.threshold_crossed': 'on' });
    const shown = await (await owner.follow(added)).text();
    const secret = /<code id="wh-secret">([^<]+)<\/code>/.exec(shown)?.[1];
    expect(secret).toMatch(/^whsec_/);
    const again = await (await owner.get('/dashboard/webhooks')).text();
    expect(again).not.toContain(secret!);
    expect(again).toContain(rx.url);

    const res = await post(t, '/v1/chat/completions', {
      model: 'b-4.1-mini',
      max_tokens: 2000,
      messages: [{ role: 'user', content: 'x [[sim:usage output=2000]]' }],
    });
    expect(res.status).toBe(200);
    await res.text();
    await rx.waitFor(1);
    expect(
      verifySignature(secret!, String(rx.received[0]!.headers['x-gateway-signature']), rx.received[0]!.body, Math.floor(Date.now() / 1000)),
    ).toBe(true);
    await sleep(200);
    const listed = await (await owner.get('/dashboard/webhooks')).text();
    expect(listed).toContain('balance.threshold_crossed');
    expect(listed).toContain('delivered');
    const replayPath = /action="(\/dashboard\/webhooks\/[^"]+\/replay)"/.exec(listed)?.[1];
    expect(replayPath).toBeDefined();
    expect((await owner.post(replayPath!, {})).status).toBe(303);
    await rx.waitFor(2);
    expect(rx.received[1]!.json.id).toBe(rx.received[0]!.json.id);

    const id = /data-webhook-id="([^"]+)"/.exec(listed)![1];
    const deleted = await owner.follow(await owner.post(`/dashboard/webhooks/${id}/delete`, {}));
    expect(await deleted.text()).toContain('The webhook was deleted.');

    const audit = await fetch(`${t.url}/admin/v1/wallets/${t.walletId}/audit`, { headers: { authorization: 'Bearer test-admin-token' } });
    const entries = ((await audit.json()) as any).data as any[];
    const actions = entries.map((e) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['alerts.changed', 'webhook.created', 'webhook.deleted']));
    expect(JSON.stringify(entries)).not.toContain(secret!);
  }, 60_000);
});

describe('/dashboard/webhooks without the allow setting', () => {
  let strict: TestGateway;
  beforeAll(async () => {
    strict = await startTestGateway({ credits: 1_000 });
  }, 60_000);
  afterAll(async () => strict?.close());

  it('refuses a loopback URL with a 400 page', async () => {
    const o = await signIn(strict, strict.walletId);
    const res = await o.post('/dashboard/webhooks', { url: 'http://127.0.0.1:8080/hook', 'event:video.finished': 'on' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('private, loopback or reserved address');
  }, 30_000);
});
