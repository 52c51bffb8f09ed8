// HTTP/2 to vendors (vendors.yaml `http2`): calls share a connection only when the vendor answers in HTTP/2,
// never pipelined on an HTTP/1.1 one, and nothing changes for a vendor without the flag.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { constants, createSecureServer, type Http2SecureServer, type ServerHttp2Session } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { CallAbort } from '../../engine/calls/call-signal.ts';
import { UpstreamClient } from '../../engine/calls/upstream.ts';
import type { Route } from '../../engine/calls/vendor-routes.ts';
import type { VendorConfig } from '../../engine/catalog/config.ts';

const cert = readFileSync(new URL('../fixtures/tls/cert.pem', import.meta.url), 'utf8');
const key = readFileSync(new URL('../fixtures/tls/key.pem', import.meta.url), 'utf8');

const vendor = (http2?: boolean): VendorConfig => ({
  name: 'Vendor B',
  credential: { header: 'authorization', scheme: 'Bearer' },
  headers: {},
  forward_headers: [],
  ...(http2 === undefined ? {} : { http2 }),
});
const route = (baseUrl: string): Route => ({ vendor: 'b', index: 0, baseUrl, key: 'k', simulated: false });

/** What a vendor saw: each request's HTTP version and connection, and the most in flight at once on one connection. */
interface Seen {
  versions: string[];
  connections: Set<unknown>;
  mostAtOnceOnOne: number;
}

/**
 * Answers once `hold` calls are in (or at once when hold is 1), so calls that can share a connection are all
 * in flight together: a client that sends them one after another on one connection would never reach `hold`.
 */
function vendorHandler(seen: Seen, hold: number) {
  const inFlight = new Map<unknown, number>();
  const waiting: Array<() => void> = [];
  return (
    req: { httpVersion: string; socket: unknown; stream?: { session: unknown }; on(e: 'end', f: () => void): void; resume(): void },
    res: { writeHead(s: number, h: Record<string, string>): void; end(b: string): void },
  ) => {
    const conn = req.stream?.session ?? req.socket;
    seen.versions.push(req.httpVersion);
    seen.connections.add(conn);
    const now = (inFlight.get(conn) ?? 0) + 1;
    inFlight.set(conn, now);
    seen.mostAtOnceOnOne = Math.max(seen.mostAtOnceOnOne, now);
    req.resume();
    req.on('end', () => {
      const answer = () => {
        inFlight.set(conn, (inFlight.get(conn) ?? 1) - 1);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      };
      waiting.push(answer);
      if (waiting.length >= hold) for (const a of waiting.splice(0)) a();
      else setTimeout(() => waiting.splice(0).forEach((a) => a()), 300).unref();
    });
  };
}

const servers: Array<HttpServer | Http2SecureServer> = [];
const clients: UpstreamClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  for (const s of servers.splice(0)) {
    (s as HttpServer).closeAllConnections?.();
    s.close();
  }
});

async function listen(server: HttpServer | Http2SecureServer, scheme: 'http' | 'https'): Promise<string> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function upstream(streams = 100): UpstreamClient {
  const c = new UpstreamClient({ connectTimeoutMs: 5_000, connectionsPerOrigin: 64, http2Streams: streams, tls: { ca: cert } });
  clients.push(c);
  return c;
}

async function sendMany(client: UpstreamClient, baseUrl: string, v: VendorConfig, n: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const answer = await client.send(
        route(baseUrl),
        v,
        { path: '/v1/chat/completions', body: '{"model":"b-5-mini"}', contentType: 'application/json', headers: {} },
        undefined,
      );
      await answer.body.text();
      return answer.status;
    }),
  );
}

const fresh = (): Seen => ({ versions: [], connections: new Set(), mostAtOnceOnOne: 0 });

describe('HTTP/2 to a vendor', () => {
  it('with http2: true, calls to a vendor that answers in HTTP/2 share one connection at once', async () => {
    const seen = fresh();
    const base = await listen(createSecureServer({ cert, key, allowHTTP1: true }, vendorHandler(seen, 1) as never), 'https');
    const client = upstream();
    await sendMany(client, base, vendor(true), 1); // the connection is open: later calls find it
    const n = 20;
    const held = fresh();
    servers[0]!.removeAllListeners('request');
    servers[0]!.on('request', vendorHandler(held, n) as never);
    expect(await sendMany(client, base, vendor(true), n)).toEqual(Array(n).fill(200));
    expect(seen.versions).toEqual(['2.0']);
    expect(held.versions).toEqual(Array(n).fill('2.0'));
    expect(held.connections.size).toBe(1);
    expect(held.mostAtOnceOnOne).toBe(n);
  });

  it('an answer read to its end is not reset: 2,000 calls, no connection ended by the vendor (rapid-reset defence)', async () => {
    // Servers on nghttp2 (Node's among them) end a connection that resets streams faster than they allow
    // (the HTTP/2 rapid-reset defence: a burst of 1,000, then 33 a second) with GOAWAY INTERNAL_ERROR, and
    // every call in flight on it fails. A client that resets each stream after its answer (CANCEL on a stream
    // already ended) met that after about 1,000 calls.
    const sessions = new Set<ServerHttp2Session>();
    const server = createSecureServer({ cert, key }, (req, res) => {
      sessions.add(req.stream.session as ServerHttp2Session);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '11' });
        res.end('{"ok":true}');
      });
    });
    const base = await listen(server, 'https');
    const client = upstream();
    const statuses: number[] = [];
    for (let round = 0; round < 20; round++) statuses.push(...(await sendMany(client, base, vendor(true), 100)));
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(statuses).toHaveLength(2_000);
    expect([...sessions].filter((s) => s.closed || s.destroyed)).toHaveLength(0);
  });

  it('never more calls at once on one connection than vendor_http2_streams', async () => {
    const seen = fresh();
    const base = await listen(createSecureServer({ cert, key, allowHTTP1: true }, vendorHandler(seen, 1) as never), 'https');
    const client = upstream(4);
    await sendMany(client, base, vendor(true), 1);
    const held = fresh();
    servers[0]!.removeAllListeners('request');
    servers[0]!.on('request', vendorHandler(held, 12) as never);
    expect(await sendMany(client, base, vendor(true), 12)).toEqual(Array(12).fill(200));
    expect(held.mostAtOnceOnOne).toBe(4);
    expect(held.connections.size).toBeGreaterThanOrEqual(3);
  });

  it('streams whose readers stopped do not hold up the other calls on their connection', async () => {
    // A client that stops reading stops the gateway reading its vendor stream (back-pressure). On HTTP/2 each
    // such stream keeps its own window's worth, not the connection's: the other calls on it go on.
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const server = createSecureServer({ cert, key }, (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        if (req.url !== '/endless') return void res.end('small');
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on('drain', pump);
        pump();
      });
    });
    const base = await listen(server, 'https');
    const client = upstream();
    const send = (path: string) =>
      client.send(route(base), vendor(true), { path, body: '{}', contentType: 'application/json', headers: {} }, undefined);
    await (await send('/small')).body.text();
    const stalled = await Promise.all(Array.from({ length: 30 }, () => send('/endless'))); // never read
    await new Promise((r) => setTimeout(r, 200));
    const others = Promise.all(Array.from({ length: 5 }, async () => (await send('/small')).body.text()));
    const late = new Promise((r) => setTimeout(() => r('still waiting after 3 s'), 3_000).unref());
    expect(await Promise.race([others, late])).toEqual(Array(5).fill('small'));
    for (const s of stalled) s.body.destroy();
  });

  it('a vendor that allows fewer streams than vendor_http2_streams: its limit per connection, more connections', async () => {
    const atOnce = new Map<unknown, number>();
    let most = 0;
    // Every call of a burst is answered once the whole burst has arrived, so the calls are all in flight together
    // however slowly a loaded machine sends them (a fixed pause let early answers free streams for later calls).
    let burst = 1;
    const held: Array<() => void> = [];
    const server = createSecureServer({ cert, key, settings: { maxConcurrentStreams: 4 } }, (req, res) => {
      const session = req.stream.session;
      const now = (atOnce.get(session) ?? 0) + 1;
      atOnce.set(session, now);
      most = Math.max(most, now);
      req.resume();
      req.on('end', () => {
        held.push(() => {
          atOnce.set(session, atOnce.get(session)! - 1);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"ok":true}');
        });
        if (held.length === burst) for (const answer of held.splice(0)) answer();
      });
    });
    const base = await listen(server, 'https');
    const client = upstream(100);
    await sendMany(client, base, vendor(true), 1);
    burst = 20;
    expect(await sendMany(client, base, vendor(true), 20)).toEqual(Array(20).fill(200));
    expect(most).toBe(4);
    expect(atOnce.size).toBe(5); // 20 calls at once, 4 on each connection
  });

  it('a vendor closing its connection gracefully (GOAWAY): the calls it took finish, the next takes a new connection', async () => {
    const open: Array<{ res: { write(s: string): void; end(s: string): void }; session: unknown }> = [];
    const sessions = new Set<unknown>();
    const server = createSecureServer({ cert, key }, (req, res) => {
      sessions.add(req.stream.session);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('start;');
        if (req.url === '/now') return void res.end('end');
        open.push({ res, session: req.stream.session });
      });
    });
    const base = await listen(server, 'https');
    const client = upstream();
    const send = (path: string) =>
      client.send(route(base), vendor(true), { path, body: '{}', contentType: 'application/json', headers: {} }, undefined);
    const calls = Array.from({ length: 5 }, async () => (await send('/held')).body.text());
    for (let waited = 0; open.length < 5 && waited < 2_000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    (open[0]!.session as ServerHttp2Session).goaway(constants.NGHTTP2_NO_ERROR, 2 ** 31 - 1);
    await new Promise((r) => setTimeout(r, 50));
    for (const o of open.splice(0)) o.res.end('end');
    expect(await Promise.all(calls)).toEqual(Array(5).fill('start;end'));
    expect(await (await send('/now')).body.text()).toBe('start;end');
    expect(sessions.size).toBe(2);
  });

  it('calls a vendor refuses unprocessed when it goes away are sent again on a new connection, once', async () => {
    const answered = new Map<string, number>();
    let refuseAbove = Infinity;
    const pending: Array<() => void> = [];
    const server = createSecureServer({ cert, key }, (req, res) => {
      const { id = 0, session } = req.stream; // the session as it was: a stream of a closed one no longer names it
      req.resume();
      req.on('end', () => {
        const answer = () => {
          if (id > refuseAbove && session === firstSession) return void req.stream.close(constants.NGHTTP2_REFUSED_STREAM);
          answered.set(req.url, (answered.get(req.url) ?? 0) + 1);
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end(`answer ${req.url}`);
        };
        firstSession ??= session;
        pending.push(answer);
      });
    });
    let firstSession: unknown;
    const base = await listen(server, 'https');
    const client = upstream();
    const calls = Array.from({ length: 5 }, async (_, i) =>
      (
        await client.send(
          route(base),
          vendor(true),
          { path: `/c${i}`, body: '{}', contentType: 'application/json', headers: {} },
          undefined,
        )
      ).body.text(),
    );
    for (let waited = 0; pending.length < 5 && waited < 2_000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    // It took the first two streams (ids 1 and 3) and no later one.
    refuseAbove = 3;
    (firstSession as ServerHttp2Session).goaway(constants.NGHTTP2_NO_ERROR, 3);
    for (const answer of pending.splice(0)) answer();
    // The three sent again arrive on a new connection; answer them as they come.
    for (let waited = 0; waited < 2_000 && [...answered.values()].reduce((a, b) => a + b, 0) < 5; waited += 10) {
      for (const answer of pending.splice(0)) answer();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await Promise.all(calls)).toEqual([0, 1, 2, 3, 4].map((i) => `answer /c${i}`));
    expect([...answered.values()]).toEqual([1, 1, 1, 1, 1]); // each answered once
  });

  it("a call's time limit, passed mid-answer, ends its stream at the vendor and not its neighbours", async () => {
    const closed: number[] = [];
    const server = createSecureServer({ cert, key }, (req, res) => {
      req.stream.on('close', () => closed.push(req.stream.rstCode ?? -1));
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('start;');
        if (req.url === '/short') res.end('end');
      });
    });
    const base = await listen(server, 'https');
    const client = upstream();
    const limit = new CallAbort();
    const long = await client.send(
      route(base),
      vendor(true),
      { path: '/long', body: '{}', contentType: 'application/json', headers: {} },
      limit,
    );
    const reading = long.body.text();
    limit.abort(new Error('time limit'));
    await expect(reading).rejects.toThrow();
    const short = await client.send(
      route(base),
      vendor(true),
      { path: '/short', body: '{}', contentType: 'application/json', headers: {} },
      undefined,
    );
    expect(await short.body.text()).toBe('start;end');
    for (let waited = 0; closed.length < 2 && waited < 2_000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    expect(closed).toContain(constants.NGHTTP2_CANCEL);
  });

  it('an answer cut by the vendor (connection dropped, stream reset) reads as an error, never as a whole answer', async () => {
    const server = createSecureServer({ cert, key }, (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('start;');
        setTimeout(() => (req.url === '/reset' ? req.stream.close(constants.NGHTTP2_INTERNAL_ERROR) : req.stream.session?.destroy()), 30);
      });
    });
    const base = await listen(server, 'https');
    const client = upstream();
    const read = async (path: string) =>
      (
        await client.send(route(base), vendor(true), { path, body: '{}', contentType: 'application/json', headers: {} }, undefined)
      ).body.text();
    const within = <T>(p: Promise<T>) => Promise.race([p, new Promise((r) => setTimeout(() => r('no end after 2 s'), 2_000))]);
    await expect(within(read('/reset'))).rejects.toThrow();
    await expect(within(read('/drop'))).rejects.toThrow();
  });

  it('a vendor that takes the handshake but never sends its HTTP/2 settings fails the call within the connect timeout', async () => {
    // A TLS server that picks h2 and then says nothing: no SETTINGS frame ever comes.
    const server = createTlsServer({ cert, key, ALPNProtocols: ['h2'] }, (socket) => socket.on('data', () => {}));
    servers.push(server as never);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new UpstreamClient({ connectTimeoutMs: 300, connectionsPerOrigin: 8, tls: { ca: cert } });
    clients.push(client);
    const started = Date.now();
    await expect(
      client.send(route(base), vendor(true), { path: '/x', body: '{}', contentType: 'application/json', headers: {} }, undefined),
    ).rejects.toThrow(/settings/);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('with http2: true, a vendor that answers in HTTP/1.1 gets one call at a time per connection (never pipelined POSTs)', async () => {
    // Each answer's headers go out at once and its body when the test says, as a stream's would: undici 7 would
    // pipeline a call marked idempotent onto a connection whose answer has its headers, behind the rest of a
    // stream that may run for minutes.
    const connections = new Set<unknown>();
    const open: Array<() => void> = [];
    let arrived = 0;
    const base = await listen(
      createHttpsServer({ cert, key }, (req, res) => {
        arrived++;
        connections.add(req.socket);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        open.push(() => res.end('{"ok":true}'));
        req.resume();
      }),
      'https',
    );
    const client = upstream();
    const send = () =>
      client.send(
        route(base),
        vendor(true),
        { path: '/v1/chat/completions', body: '{}', contentType: 'application/json', headers: {} },
        undefined,
      );
    const first = await Promise.all(Array.from({ length: 8 }, send)); // eight answers with headers, bodies still coming
    const later = Array.from({ length: 8 }, send);
    try {
      for (let waited = 0; arrived < 16 && waited < 2_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
      expect(arrived).toBe(16); // none waits behind another's answer
      expect(connections.size).toBe(16);
    } finally {
      for (let ended = 0; ended < 16 && open.length + ended > 0; ) {
        ended += open.length;
        open.splice(0).forEach((end) => end());
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    for (const a of [...first, ...(await Promise.all(later))]) expect(await a.body.text()).toBe('{"ok":true}');
  });

  it('with http2: true on a plain http:// route (the simulator), calls go in HTTP/1.1, one per connection', async () => {
    const seen = fresh();
    const base = await listen(createHttpServer(vendorHandler(seen, 6)), 'http');
    expect(await sendMany(upstream(), base, vendor(true), 6)).toEqual(Array(6).fill(200));
    expect(seen.versions).toEqual(Array(6).fill('1.1'));
    expect(seen.mostAtOnceOnOne).toBe(1);
  });

  it('without the flag, a vendor that offers HTTP/2 is spoken to in HTTP/1.1', async () => {
    const seen = fresh();
    const base = await listen(createSecureServer({ cert, key, allowHTTP1: true }, vendorHandler(seen, 6) as never), 'https');
    for (const v of [vendor(), vendor(false)]) {
      seen.versions.length = 0;
      expect(await sendMany(upstream(), base, v, 6)).toEqual(Array(6).fill(200));
      expect(seen.versions).toEqual(Array(6).fill('1.1'));
      expect(seen.mostAtOnceOnOne).toBe(1);
    }
  });
});
