// Sends one request to one vendor route over a keep-alive undici Pool. Which route comes next, and on
// what, is route-loop.ts's business; a connection that fails here is a RouteFailure for it to see.
import type { ConnectionOptions, TLSSocket } from 'node:tls';
import { buildConnector, Client, Pool, type Dispatcher } from 'undici';
import type { VendorConfig } from '../catalog/config.ts';
import type { Route } from './vendor-routes.ts';
import type { CallSignal } from './call-signal.ts';
import { derivedFromText } from '../core/derived.ts';

export interface UpstreamRequest {
  path: string;
  /** JSON body, or raw bytes with their content-type (multipart). */
  body: string | Buffer;
  contentType: string;
  headers: Record<string, string>;
}

export interface UpstreamAnswer {
  status: number;
  headers: Record<string, string>;
  body: Dispatcher.ResponseData['body'];
}

/** A route failed in a way that lets the same model try the next route. */
export class RouteFailure extends Error {
  readonly status?: number;
  constructor(message: string, status?: number) {
    super(message);
    this.name = 'RouteFailure';
    this.status = status;
  }
}

/** The route's key in the header the vendor reads it from (`Authorization: Bearer …`, `x-api-key: …`). */
export function routeCredential(vendor: VendorConfig, route: Route): Record<string, string> {
  return { [vendor.credential.header]: vendor.credential.scheme ? `${vendor.credential.scheme} ${route.key}` : route.key };
}

export interface UpstreamOptions {
  connectTimeoutMs: number;
  connectionsPerOrigin: number;
  /** Calls at once on one HTTP/2 connection to a vendor (limits.yaml `vendor_http2_streams`). */
  http2Streams?: number;
  /** TLS options of connections to vendors. The gateway passes none (Node's trust store, NODE_EXTRA_CA_CERTS included). */
  tls?: ConnectionOptions;
}

/** Calls at once on one HTTP/2 connection when limits.yaml does not say: what vendors' servers commonly allow. */
export const DEFAULT_HTTP2_STREAMS = 100;

export class UpstreamClient {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly opts: UpstreamOptions) {}

  async send(route: Route, vendor: VendorConfig, req: UpstreamRequest, signal: CallSignal | undefined): Promise<UpstreamAnswer> {
    return this.request(route, vendor, signal, {
      method: 'POST',
      path: req.path,
      headers: { ...req.headers, 'content-type': req.contentType },
      body: req.body,
    });
  }

  /** GET on a vendor route with the route's credential (vendor D's video job status). */
  async get(route: Route, vendor: VendorConfig, path: string, signal: CallSignal | undefined): Promise<UpstreamAnswer> {
    return this.request(route, vendor, signal, { method: 'GET', path, headers: { accept: 'application/json' } });
  }

  private async request(
    route: Route,
    vendor: VendorConfig,
    signal: CallSignal | undefined,
    req: { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string | Buffer },
  ): Promise<UpstreamAnswer> {
    const base = originAndPath(route.baseUrl);
    const headers: Record<string, string> = { ...vendor.headers, ...req.headers, ...routeCredential(vendor, route) };
    const http2 = vendor.http2 === true;
    try {
      const res = await this.pool(base.origin, http2).request({
        method: req.method,
        path: base.path + req.path,
        headers,
        body: req.body,
        signal,
        headersTimeout: 0,
        bodyTimeout: 0,
        // undici 7 puts a POST on an HTTP/2 connection beside others only when told it may: the body is a string
        // or bytes, never a stream, so nothing is lost if the connection fails under it. On an HTTP/1.1
        // connection it changes nothing (one call at a time: see multiplexingClient).
        idempotent: http2 || undefined,
      });
      return { status: res.statusCode, headers: flattenHeaders(res.headers), body: res.body };
    } catch (e) {
      if (signal?.aborted) throw e;
      throw new RouteFailure(`connection to vendor ${route.vendor} route ${route.index} failed: ${(e as Error).message}`);
    }
  }

  /** One pool per origin and HTTP/2 choice: a reload that turns `http2` on or off starts new connections. */
  private pool(origin: string, http2: boolean): Pool {
    const key = http2 ? `${origin} h2` : origin;
    let pool = this.pools.get(key);
    if (!pool) {
      const { connectTimeoutMs, connectionsPerOrigin, tls } = this.opts;
      const streams = this.opts.http2Streams ?? DEFAULT_HTTP2_STREAMS;
      pool = new Pool(origin, {
        connections: connectionsPerOrigin,
        connectTimeout: connectTimeoutMs,
        keepAliveTimeout: 30_000,
        ...(tls ? { connect: tls } : {}),
        ...(http2 ? { factory: multiplexingClient(streams, connectTimeoutMs, tls) } : {}),
      });
      this.pools.set(key, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close().catch(() => undefined)));
    this.pools.clear();
  }
}

/**
 * Connections that offer HTTP/2 (ALPN, so https only). One the vendor answers in HTTP/2 carries up to `streams`
 * calls at once; one it answers in HTTP/1.1 (or a plain http:// route) carries one at a time, as without the
 * flag: undici 7 would otherwise pipeline the calls marked idempotent on it, and a vendor does not expect
 * pipelined POSTs. A new connection starts at one call, so a burst before the first handshake opens more
 * connections (as HTTP/1.1 would) rather than queueing behind one that may turn out to be HTTP/1.1.
 */
function multiplexingClient(streams: number, connectTimeoutMs: number, tls: ConnectionOptions | undefined) {
  const connect = buildConnector({ ...tls, timeout: connectTimeoutMs, allowH2: true });
  return (origin: URL, options: Client.Options): Dispatcher => {
    const client: Client = new Client(origin, {
      ...options,
      connect: (o, done) =>
        connect(o, (...connected) => {
          // Before undici sees the socket: no call is written on it until this is set.
          const socket = connected[1];
          if (socket) client.pipelining = (socket as TLSSocket).alpnProtocol === 'h2' ? streams : 1;
          done(...connected);
        }),
    });
    return client;
  };
}

/** A route's base URL as undici wants it: the origin to pool by, and the path to put before each request's. */
const originAndPath = derivedFromText((baseUrl) => {
  const url = new URL(baseUrl);
  return { origin: url.origin, path: url.pathname.replace(/\/$/, '') };
});

function flattenHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
