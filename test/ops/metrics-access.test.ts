// Who may read /metrics: nobody by default, loopback peers included (behind a reverse proxy on the same host
// every client's request comes from loopback); whoever sends GATEWAY_METRICS_TOKEN when one is set; loopback
// peers when the operator sets GATEWAY_METRICS_OPEN=loopback. The peer is the socket's address, so the HTTP
// tests reach the real gateway app from a non-loopback address: over a real socket on this machine's own
// network address when it has one, and always through Fastify's inject with a forced remote address.
import { createServer, type Server } from 'node:http';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../engine/gateway.ts';
import { mayReadMetrics, metricsAccessFrom } from '../../engine/observe/routes.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const REMOTE = '203.0.113.7';
const LOOPBACKS = ['127.0.0.1', '::1', '::ffff:127.0.0.1'];
const OTHERS = [REMOTE, '192.168.1.10', '::ffff:10.0.0.1', 'fd00::2', '127.0.0.1.evil', '', undefined];

describe('mayReadMetrics', () => {
  it('by default lets nobody in, loopback peers included, whatever they send', () => {
    const closed = metricsAccessFrom({});
    for (const peer of [...LOOPBACKS, ...OTHERS]) {
      expect(mayReadMetrics(peer, undefined, closed), String(peer)).toBe(false);
      expect(mayReadMetrics(peer, 'Bearer anything', closed), String(peer)).toBe(false);
    }
    expect(mayReadMetrics(REMOTE, 'Bearer ', metricsAccessFrom({ GATEWAY_METRICS_TOKEN: '' }))).toBe(false); // an empty token is no token
  });

  it('opened to loopback lets loopback peers in and nobody else', () => {
    const open = metricsAccessFrom({ GATEWAY_METRICS_OPEN: 'loopback' });
    for (const peer of LOOPBACKS) expect(mayReadMetrics(peer, undefined, open), peer).toBe(true);
    for (const peer of OTHERS) expect(mayReadMetrics(peer, 'Bearer anything', open), String(peer)).toBe(false);
  });

  it('with a token asks everyone for it, loopback included, unless loopback was opened too', () => {
    const token = 'scrape-secret';
    const access = metricsAccessFrom({ GATEWAY_METRICS_TOKEN: token });
    for (const peer of [REMOTE, '127.0.0.1']) {
      expect(mayReadMetrics(peer, `Bearer ${token}`, access)).toBe(true);
      expect(mayReadMetrics(peer, `bearer   ${token}`, access)).toBe(true);
      expect(mayReadMetrics(peer, undefined, access)).toBe(false);
      expect(mayReadMetrics(peer, 'Bearer scrape-secre', access)).toBe(false);
      expect(mayReadMetrics(peer, `Bearer ${token}x`, access)).toBe(false);
      expect(mayReadMetrics(peer, token, access)).toBe(false);
    }
    const both = metricsAccessFrom({ GATEWAY_METRICS_TOKEN: token, GATEWAY_METRICS_OPEN: 'loopback' });
    expect(mayReadMetrics('127.0.0.1', undefined, both)).toBe(true);
    expect(mayReadMetrics(REMOTE, undefined, both)).toBe(false);
    expect(mayReadMetrics(REMOTE, `Bearer ${token}`, both)).toBe(true);
  });

  it('a GATEWAY_METRICS_OPEN it does not know stops the start', async () => {
    for (const value of ['1', 'true', 'all', 'Loopback'])
      expect(() => metricsAccessFrom({ GATEWAY_METRICS_OPEN: value }), value).toThrow(/GATEWAY_METRICS_OPEN/);
    await expect(createGateway({ env: { GATEWAY_DATA_DIR: 'memory://', GATEWAY_METRICS_OPEN: 'yes' }, logger: false })).rejects.toThrow(
      /GATEWAY_METRICS_OPEN/,
    );
  });
});

/** A non-loopback IPv4 address of this machine, if it has one. */
const ownAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

describe.each([
  { token: undefined, open: undefined },
  { token: 'scrape-secret', open: undefined },
  { token: undefined, open: 'loopback' },
])('/metrics, GATEWAY_METRICS_TOKEN=$token GATEWAY_METRICS_OPEN=$open', ({ token, open }) => {
  let t: TestGateway;
  let remoteServer: Server | undefined;
  let remoteBase: string | undefined;
  beforeAll(async () => {
    t = await startTestGateway({
      env: { ...(token ? { GATEWAY_METRICS_TOKEN: token } : {}), ...(open ? { GATEWAY_METRICS_OPEN: open } : {}) },
    });
    await t.gw.app.ready();
    if (ownAddress) {
      // The real app behind a second listener on the machine's own address: the peer a request shows
      // is that address, not loopback.
      remoteServer = createServer((req, res) => t.gw.app.routing(req, res));
      await new Promise<void>((r) => remoteServer!.listen(0, ownAddress, r));
      const addr = remoteServer.address();
      remoteBase = `http://${ownAddress}:${typeof addr === 'object' && addr ? addr.port : 0}`;
    }
  });
  afterAll(async () => {
    await new Promise((r) => (remoteServer ? remoteServer.close(r) : r(undefined)));
    await t?.close();
  });

  const withToken: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};

  it('is refused (403, chat shape) without the token and, when one is set, allowed with it (inject)', async () => {
    const refused = await t.gw.app.inject({ method: 'GET', url: '/metrics', remoteAddress: REMOTE });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({ type: 'permission_error', message: expect.stringMatching(/metrics/i) });
    const sent = await t.gw.app.inject({
      method: 'GET',
      url: '/metrics',
      remoteAddress: REMOTE,
      headers: { authorization: 'Bearer scrape-secret' },
    });
    expect(sent.statusCode).toBe(token ? 200 : 403);
    if (token) expect(sent.body).toContain('gateway_requests_total');
    // Health and readiness stay open to the same peer.
    expect((await t.gw.app.inject({ method: 'GET', url: '/healthz', remoteAddress: REMOTE })).statusCode).toBe(200);
  });

  it.skipIf(!ownAddress)('is refused without the token over a real socket from a non-loopback address, allowed with it', async () => {
    const refused = await fetch(`${remoteBase}/metrics`);
    expect(refused.status).toBe(403);
    const sent = await fetch(`${remoteBase}/metrics`, { headers: withToken });
    expect(sent.status).toBe(token ? 200 : 403);
    expect((await fetch(`${remoteBase}/healthz`)).status).toBe(200);
  });

  it('over loopback (as every request behind a reverse proxy on the same host arrives) is open only when the operator opened it', async () => {
    const plain = await fetch(`${t.url}/metrics`, { headers: { 'x-forwarded-for': REMOTE } });
    expect(plain.status).toBe(open === 'loopback' ? 200 : 403);
    if (plain.status === 403) expect(await plain.text()).toMatch(token ? /token/ : /GATEWAY_METRICS_OPEN=loopback/);
    else expect(await plain.text()).toContain('gateway_requests_total');
    expect((await fetch(`${t.url}/metrics`, { headers: withToken })).status).toBe(token || open ? 200 : 403);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});
