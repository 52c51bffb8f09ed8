// Who may read /metrics: without GATEWAY_METRICS_TOKEN only a loopback peer, with it whoever sends it. The
// peer is the socket's address, so the HTTP tests reach the real gateway app from a non-loopback address:
// over a real socket on this machine's own network address when it has one, and always through Fastify's
// inject with a forced remote address.
import { createServer, type Server } from 'node:http';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mayReadMetrics } from '../../engine/observe/routes.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const REMOTE = '203.0.113.7';

describe('mayReadMetrics', () => {
  it('without a token lets loopback peers in and nobody else, whatever they send', () => {
    for (const peer of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) expect(mayReadMetrics(peer, undefined, undefined), peer).toBe(true);
    for (const peer of [REMOTE, '192.168.1.10', '::ffff:10.0.0.1', 'fd00::2', '127.0.0.1.evil', '', undefined]) {
      expect(mayReadMetrics(peer, undefined, undefined), String(peer)).toBe(false);
      expect(mayReadMetrics(peer, 'Bearer anything', undefined), String(peer)).toBe(false);
    }
    expect(mayReadMetrics(REMOTE, undefined, '')).toBe(false); // an empty token is no token
  });

  it('with a token asks everyone for it, loopback included', () => {
    const token = 'scrape-secret';
    for (const peer of [REMOTE, '127.0.0.1']) {
      expect(mayReadMetrics(peer, `Bearer ${token}`, token)).toBe(true);
      expect(mayReadMetrics(peer, `bearer   ${token}`, token)).toBe(true);
      expect(mayReadMetrics(peer, undefined, token)).toBe(false);
      expect(mayReadMetrics(peer, 'Bearer scrape-secre', token)).toBe(false);
      expect(mayReadMetrics(peer, `Bearer ${token}x`, token)).toBe(false);
      expect(mayReadMetrics(peer, token, token)).toBe(false);
    }
  });
});

/** A non-loopback IPv4 address of this machine, if it has one. */
const ownAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

describe.each([
  { token: undefined },
  { token: 'scrape-secret' },
])('/metrics from a non-loopback peer, GATEWAY_METRICS_TOKEN=$token', ({ token }) => {
  let t: TestGateway;
  let remoteServer: Server | undefined;
  let remoteBase: string | undefined;
  beforeAll(async () => {
    t = await startTestGateway({ env: token ? { GATEWAY_METRICS_TOKEN: token } : {} });
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
    const sent = await t.gw.app.inject({ method: 'GET', url: '/metrics', remoteAddress: REMOTE, headers: { authorization: 'Bearer scrape-secret' } });
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
    // The loopback listener of the same gateway: open without a token only when none is set.
    expect((await fetch(`${t.url}/metrics`)).status).toBe(token ? 403 : 200);
  });
});
