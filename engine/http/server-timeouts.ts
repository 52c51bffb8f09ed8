// The HTTP server under the Fastify app, with bounds on how long a client may take to send its request.
// Node enforces them by checking open connections every `connectionsCheckingInterval`; its default of 30 s
// would let a request overstay a short bound by that much, so the check runs every second.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

interface RequestTimeouts {
  /** The whole request, headers and body (limits.request_timeout_ms). */
  requestTimeoutMs?: number | undefined;
  /** The headers alone (limits.headers_timeout_ms). */
  headersTimeoutMs?: number | undefined;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
const CHECK_EVERY_MS = 1000;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A Fastify `serverFactory`: a plain HTTP server that drops a request still arriving after its bound. */
export function serverWithTimeouts(t: RequestTimeouts): (handler: Handler) => Server {
  const requestTimeout = t.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  // Node requires headersTimeout ≤ requestTimeout.
  const headersTimeout = Math.min(t.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS, requestTimeout);
  return (handler) => createServer({ requestTimeout, headersTimeout, connectionsCheckingInterval: CHECK_EVERY_MS }, handler);
}
