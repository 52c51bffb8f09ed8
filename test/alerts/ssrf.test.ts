// Where webhooks may go. Without GATEWAY_WEBHOOKS_ALLOW_PRIVATE, a private, loopback, link-local, CGNAT,
// multicast or unique-local address (IPv4-mapped forms included) is refused at registration; a name that resolves
// to 127.0.0.1 at delivery time (DNS rebinding: it passed the check when registered) is refused by the connection
// itself, the attempt recorded, the receiver never reached.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressGuard, isRefusedAddress } from '../../engine/alerts/address-guard.ts';
import { DeliveryWorker } from '../../engine/alerts/delivery-worker.ts';
import type { Db } from '../../engine/db/db.ts';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { doors, type Receiver, sleep, startReceiver } from './receiver.ts';

describe('isRefusedAddress', () => {
  it.each([
    '127.0.0.1',
    '127.5.5.5',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '224.0.0.1',
    '239.255.255.250',
    '255.255.255.255',
    '::1',
    '::',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    '64:ff9b::a00:1',
    '2002:7f00:1::',
    // Found by the attack run: reserved ranges that embed or route to IPv4, and other non-global IPv6.
    '::ffff:0:7f00:1',
    '::ffff:0:a00:1',
    '64:ff9b:1::1',
    '2001::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '2001:10::1',
    '2001:20::1',
    '3fff::1',
    '5f00::1',
    '100::1',
    '192.88.99.1',
  ])('refuses %s', (ip) => expect(isRefusedAddress(ip)).toBe(true));
  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '2a00:1450:4001:81b::200e',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('allows %s', (ip) => expect(isRefusedAddress(ip)).toBe(false));
});

describe('a name that resolved publicly when registered and privately when delivered (DNS rebinding)', () => {
  it('passes the registration check, then the connection refuses it', async () => {
    let calls = 0;
    const resolve = async () => (calls++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    const guard = createAddressGuard({ allowPrivate: false, resolve });
    const rx = await startReceiver();
    try {
      await expect(guard.checkUrl(`http://rebind.example:${rx.port}/hook`)).resolves.toBeInstanceOf(URL);
      const worker = new DeliveryWorker({ db: {} as Db, guard, log: () => ({ warn: () => {}, error: () => {} }) });
      const outcome = await worker.send({ url: `http://rebind.example:${rx.port}/hook`, secret: 's', body: '{}', event_id: 'evt_x' });
      expect(outcome.statusCode).toBeNull();
      expect(outcome.error).toBe('refused: rebind.example is not a public address the gateway can reach');
      expect(rx.received).toHaveLength(0);
      await worker.stop();
    } finally {
      await rx.close();
    }
  });
});

// A management key chooses the URL: answers that named the address a name resolves to, or told a private address
// from no address at all, would let it map the operator's internal DNS one name at a time.
describe('a refused host name says nothing of what it resolves to', () => {
  const lookups: Record<string, () => Promise<{ address: string; family: number }[]>> = {
    'db.internal': async () => [{ address: '10.1.2.3', family: 4 }],
    'mixed.internal': async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ],
    'nowhere.internal': async () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' })),
    'empty.internal': async () => [],
  };
  const guard = createAddressGuard({ allowPrivate: false, resolve: (host) => lookups[host]!() });

  const refusal = async (url: string) => {
    const e = await guard.checkUrl(url).then(
      () => undefined,
      (err: unknown) => err as { status: number; param?: string; message: string },
    );
    if (!e) throw new Error(`${url} was accepted`);
    return e;
  };

  it('at registration: one 400 naming url and the typed host, whether the name resolves privately or not at all', async () => {
    const refused = await Promise.all(Object.keys(lookups).map((host) => refusal(`https://${host}/hook`)));
    for (const [i, host] of Object.keys(lookups).entries()) {
      expect(refused[i]!.status).toBe(400);
      expect(refused[i]!.param).toBe('url');
      expect(refused[i]!.message).toBe(`url: the gateway delivers only to public addresses it can reach; '${host}' is not one.`);
      expect(refused[i]!.message).not.toContain('10.1.2.3');
    }
  });

  it('at delivery: the stored refusal is the same for a private address and for none', async () => {
    const reason = (host: string) =>
      new Promise<string>((done) => guard.lookup(host, { all: true }, (err) => done(err ? `${err.name}: ${err.message}` : 'connected')));
    for (const host of Object.keys(lookups)) {
      const said = await reason(host);
      expect(said).toBe(`AddressRefused: ${host} is not a public address the gateway can reach`);
      expect(said).not.toContain('10.1.2.3');
    }
  });

  it('an address typed in the URL is still named back: the owner wrote it', async () => {
    expect((await refusal('http://10.1.2.3/hook')).message).toMatch(/^url: the host '10\.1\.2\.3' resolves to 10\.1\.2\.3, a private/);
  });
});

describe('without GATEWAY_WEBHOOKS_ALLOW_PRIVATE', () => {
  let t: TestGateway;
  let rx: Receiver;
  let api: ReturnType<typeof doors>;

  beforeAll(async () => {
    rx = await startReceiver();
    t = await startTestGateway({ credits: 1_000_000 });
    const { key } = await t.gw.keys.createManagementKey(t.walletId, 'ops');
    api = doors(t.url, key);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await rx?.close();
  });

  it.each([
    'http://127.0.0.1:9/hook',
    'http://localhost:9/hook',
    'http://[::1]:9/',
    'http://169.254.169.254/latest/meta-data',
    'http://10.0.0.5/',
    'http://100.64.1.1/',
    'http://[fd00::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://0.0.0.0/',
    'ftp://example.com/',
    'file:///etc/passwd',
    'not a url',
  ])('refuses %s at registration (400 naming url)', async (url) => {
    const res = await api.createWebhook({ url, events: ['balance.threshold_crossed'] });
    expect(res.status).toBe(400);
    expect(res.json.error.param).toBe('url');
  });

  it('refuses a name resolving to loopback without naming the address it resolves to', async () => {
    const res = await api.createWebhook({ url: 'http://localhost:9/hook', events: ['balance.threshold_crossed'] });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toBe("url: the gateway delivers only to public addresses it can reach; 'localhost' is not one.");
  });

  it('refuses at delivery a stored endpoint whose name resolves to 127.0.0.1, and records the attempt', async () => {
    // As if `localhost` had resolved publicly when it was registered: the row is written as registration would.
    await t.gw.db.query(
      `INSERT INTO webhooks (id, wallet_id, url, events, secret, created_at) VALUES ('wh_rebind', $1, $2, '{balance.threshold_crossed}', 'whsec_x', now())`,
      [t.walletId, `http://localhost:${rx.port}/hook`],
    );
    t.gw.alerts.watcher.forget(t.walletId);
    expect((await api.setAlerts({ balance_credits: [999_500], balance_percent_of_last_top_up: [] })).status).toBe(200);
    const res = await post(t, '/v1/chat/completions', {
      model: 'b-4.1-mini',
      max_tokens: 2000,
      messages: [{ role: 'user', content: 'x [[sim:usage output=2000]]' }],
    });
    expect(res.status).toBe(200);
    await res.text();
    let d: any;
    for (let i = 0; i < 100; i++) {
      d = (await api.deliveries('wh_rebind')).json.data[0];
      if (d?.attempts.length) break;
      await sleep(50);
    }
    expect(d.attempts[0].status_code).toBeNull();
    expect(d.attempts[0].error).toBe('refused: localhost is not a public address the gateway can reach');
    expect(d.state).toBe('pending'); // retried later by the policy, refused again each time
    expect(rx.received).toHaveLength(0);
  }, 30_000);
});
