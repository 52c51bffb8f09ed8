// Sends one request to one vendor route, always through undici's `request` on the origin's dispatcher (an
// HTTP/1.1 Pool or HTTP/2 sessions), so the rest of the call has one path whatever the vendor speaks. Which route
// comes next is route-loop.ts's business.
import type { ConnectionOptions } from 'node:tls';
import { type Dispatcher, Pool } from 'undici';
import type { VendorConfig } from '../catalog/config.ts';
import { derivedFromText } from '../core/derived.ts';
import type { CallSignal } from './call-signal.ts';
import { Http2Dispatcher } from './http2-dispatcher.ts';
import type { AnswerBody } from './http2-origin.ts';
import type { Route } from './vendor-routes.ts';

export interface UpstreamRequest {
  path: string;
  /** JSON body, or raw bytes with their content-type (multipart). */
  body: string | Buffer;
  contentType: string;
  headers: Record<string, string>;
}

export interface UpstreamAnswer {
  status: number;
  /** As undici parsed them, not copied again: lowercased names, a repeated header as a list. Read with `answerHeader`. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: AnswerBody;
}

/** One header of a vendor's answer, a repeated one joined as HTTP joins it. */
export function answerHeader(answer: Pick<UpstreamAnswer, 'headers'>, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** A route failed in a way that lets the same model try the next route. */
export class RouteFailure extends Error {
  readonly status?: number | undefined;
  /** False only when the request never left: a request not safe to send twice may then go to the next route. */
  readonly mayHaveArrived: boolean;
  constructor(message: string, status?: number, mayHaveArrived = true) {
    super(message);
    this.name = 'RouteFailure';
    this.status = status;
    this.mayHaveArrived = mayHaveArrived;
  }
}

/** Errors met before any byte of the request left: no connection, no address, no route to the host. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function neverSent(e: unknown): boolean {
  const err = e as { code?: unknown; cause?: { code?: unknown } };
  const code = err.code ?? err.cause?.code;
  return typeof code === 'string' && NOT_SENT.has(code);
}

/** The route's key as the vendor's credential header carries it (`Bearer …`, or the key alone). */
const credentialValue = (vendor: VendorConfig, route: Route): string =>
  vendor.credential.scheme ? `${vendor.credential.scheme} ${route.key}` : route.key;

/** The route's key in the header the vendor reads it from (`Authorization: Bearer …`, `x-api-key: …`). */
export function routeCredential(vendor: VendorConfig, route: Route): Record<string, string> {
  return { [vendor.credential.header]: credentialValue(vendor, route) };
}

/** One attempt's request: its headers in the order they apply, a later set's value winning. */
interface OutgoingRequest {
  method: 'GET' | 'POST';
  path: string;
  headers: Readonly<Record<string, string>>;
  traceHeaders?: Record<string, string> | undefined;
  contentType?: string;
  body?: string | Buffer;
}

const ACCEPT_JSON: Readonly<Record<string, string>> = { accept: 'application/json' };

interface UpstreamOptions {
  connectTimeoutMs: number;
  connectionsPerOrigin: number;
  /** Calls at once on one HTTP/2 connection to a vendor (limits.yaml `vendor_http2_streams`). */
  http2Streams?: number | undefined;
  /** A CA for connections to vendors. The gateway passes none (Node's trust store, NODE_EXTRA_CA_CERTS included); tests pass theirs. */
  tls?: Pick<ConnectionOptions, 'ca'> | undefined;
}

/** Calls at once on one HTTP/2 connection when limits.yaml does not say: what vendors' servers commonly allow. */
const DEFAULT_HTTP2_STREAMS = 100;

/** How long an HTTP/2 connection to a vendor stays open with no call on it (as the HTTP/1.1 pools' keep-alive). */
const IDLE_MS = 30_000;

export class UpstreamClient {
  private readonly pools = new Map<string, Pool>();
  /** Origins of vendors marked http2; one whose TLS handshake chose HTTP/1.1 passes its calls to the pool. */
  private readonly http2 = new Map<string, Http2Dispatcher>();

  constructor(private readonly opts: UpstreamOptions) {}

  /** POSTs the request on a route; `traceHeaders` (one attempt's `traceparent`) go with it, the request left as it is. */
  async send(
    route: Route,
    vendor: VendorConfig,
    req: UpstreamRequest,
    signal: CallSignal | undefined,
    traceHeaders?: Record<string, string>,
  ): Promise<UpstreamAnswer> {
    const { path, body, contentType } = req;
    return this.request(route, vendor, signal, { method: 'POST', path, headers: req.headers, traceHeaders, contentType, body });
  }

  /** GET on a vendor route with the route's credential (vendor D's video job status). */
  async get(route: Route, vendor: VendorConfig, path: string, signal: CallSignal | undefined): Promise<UpstreamAnswer> {
    return this.request(route, vendor, signal, { method: 'GET', path, headers: ACCEPT_JSON });
  }

  private async request(route: Route, vendor: VendorConfig, signal: CallSignal | undefined, req: OutgoingRequest): Promise<UpstreamAnswer> {
    const base = originAndPath(route.baseUrl);
    // The one copy of the headers an attempt sends: later ones win, the route's credential last of all.
    const headers: Record<string, string> = { ...vendor.headers, ...req.headers, ...req.traceHeaders };
    if (req.contentType) headers['content-type'] = req.contentType;
    headers[vendor.credential.header] = credentialValue(vendor, route);
    const http2 = vendor.http2 === true && base.origin.startsWith('https:');
    const dispatcher: Dispatcher = http2 ? this.http2Dispatcher(base.origin) : this.pool(base.origin);
    try {
      const res = await dispatcher.request({
        method: req.method,
        path: base.path + req.path,
        headers,
        body: req.body ?? null,
        signal: signal ?? null,
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      return { status: res.statusCode, headers: res.headers, body: res.body };
    } catch (e) {
      if (signal?.aborted) throw e;
      throw new RouteFailure(
        `connection to vendor ${route.vendor} route ${route.index} failed: ${(e as Error).message}`,
        undefined,
        !neverSent(e),
      );
    }
  }

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      const { connectTimeoutMs, connectionsPerOrigin, tls } = this.opts;
      pool = new Pool(origin, {
        connections: connectionsPerOrigin,
        connectTimeout: connectTimeoutMs,
        keepAliveTimeout: IDLE_MS,
        ...(tls ? { connect: tls } : {}),
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  private http2Dispatcher(origin: string): Http2Dispatcher {
    let h2 = this.http2.get(origin);
    if (!h2) {
      const { connectTimeoutMs, tls } = this.opts;
      const options = { streams: this.opts.http2Streams ?? DEFAULT_HTTP2_STREAMS, maxSessions: this.opts.connectionsPerOrigin };
      h2 = new Http2Dispatcher(origin, { ...options, connectTimeoutMs, idleMs: IDLE_MS, tls }, this.pool(origin));
      this.http2.set(origin, h2);
    }
    return h2;
  }

  async close(): Promise<void> {
    for (const h2 of this.http2.values()) await h2.close();
    this.http2.clear();
    await Promise.all([...this.pools.values()].map((p) => p.close().catch(() => undefined)));
    this.pools.clear();
  }
}

/** A route's base URL as undici wants it: the origin to pool by, and the path to put before each request's. */
const originAndPath = derivedFromText((baseUrl) => {
  const url = new URL(baseUrl);
  return { origin: url.origin, path: url.pathname.replace(/\/$/, '') };
});
