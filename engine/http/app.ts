// The Fastify app every room registers its routes on: the body limit, the bound on JSON depth, the one
// error handler, the answer for a path no room serves, and what every answer shares: an `x-request-id`
// and one log line, written to the process's one log (logger.ts), which the app is handed.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
import type { Runtime } from '../catalog/runtime.ts';
import { errors } from '../core/errors.ts';
import { installAccessLog, type OutcomeObserver } from './access-log.ts';
import { type BodyForPath, clientErrorReply, errorBodyOfPath, frameworkErrorReply } from './early-errors.ts';
import { depthRefusal } from './json-depth.ts';
import { notFoundHandler } from './not-found.ts';
import { installErrorHandler } from './reply-error.ts';
import { REQUEST_ID_HEADER, requestIdFor } from './request-id.ts';
import { declareRequestSlots } from './request-slots.ts';
import { collectRoutes } from './route-list.ts';
import { serverWithTimeouts } from './server-timeouts.ts';
import { unpairedSurrogateRefusal } from './unpaired-surrogates.ts';

interface BodyBounds {
  /** The deepest nesting a JSON body may have (limits.json_max_depth), read at each request. */
  jsonMaxDepth: () => number;
  /** The error body of the door at a path, for errors raised before routing; the gateway's own by default. */
  errorBodyFor?: BodyForPath;
}

function createApp(bounds: BodyBounds, opts: FastifyServerOptions = {}, observers: OutcomeObserver[] = []): FastifyInstance {
  const bodyFor = bounds.errorBodyFor ?? (() => undefined);
  const app = Fastify({
    logger: false,
    ...opts,
    genReqId: requestIdFor,
    requestIdHeader: false,
    // Our own line per request (access-log.ts) replaces Fastify's two, which log the URL with its query.
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    // An idle keep-alive connection must not hold a stopping gateway open for its keep-alive timeout.
    forceCloseConnections: 'idle',
    frameworkErrors: frameworkErrorReply(bodyFor),
    clientErrorHandler: clientErrorReply,
    // A request that reaches a stopping app gets its door's 503 (below), not Fastify's own body.
    return503OnClosing: false,
  });
  collectRoutes(app);
  declareRequestSlots(app);
  // On the raw response, so a streamed answer (written past Fastify once hijacked) carries it too. The hooks with
  // nothing to wait for take Fastify's `done` rather than being async: no promise and no microtask per request.
  const stopping = stoppingFlag(app);
  app.addHook('onRequest', (req, reply, done) => {
    reply.raw.setHeader(REQUEST_ID_HEADER, req.id);
    if (stopping.now) throw errors.stopping('The gateway is stopping. Nothing was charged; retry.');
    done();
  });
  installAccessLog(app, observers);
  installErrorHandler(app);
  // On the root, so every route of every room gets it (the key doors parse JSON in their own scope): a
  // parsed JSON body is bounded, and its text checked to be text, before any handler walks or holds for it.
  app.addHook('preValidation', (req, _reply, done) => {
    const refusal = depthRefusal(req.body, bounds.jsonMaxDepth()) ?? unpairedSurrogateRefusal(req.body);
    if (refusal) throw refusal;
    done();
  });
  app.setNotFoundHandler(notFoundHandler(app, bodyFor));
  closeIdleConnectionsWhileStopping(app);
  return app;
}

/** The app as the gateway runs it: limits.yaml's body limit, timeouts and JSON depth, each door's error body. */
export function createGatewayApp(runtime: Runtime, logger: FastifyBaseLogger, observers: OutcomeObserver[]): FastifyInstance {
  const limits = runtime.snapshot().config.limits;
  const bounds = {
    jsonMaxDepth: () => runtime.snapshot().config.limits.json_max_depth,
    errorBodyFor: (path: string) => errorBodyOfPath(runtime, path),
  };
  const timeouts = { requestTimeoutMs: limits.request_timeout_ms, headersTimeoutMs: limits.headers_timeout_ms };
  const options = { bodyLimit: limits.body_limit_bytes, serverFactory: serverWithTimeouts(timeouts), loggerInstance: logger };
  return createApp(bounds, options, observers);
}

/**
 * Whether the app has begun to stop. A request that arrives then, on a connection still open (pipelined, or sent as
 * the stop began), is refused in its door's error body, and Fastify closes the connection after the answer.
 */
function stoppingFlag(app: FastifyInstance): { now: boolean } {
  const flag = { now: false };
  app.addHook('preClose', (done) => {
    flag.now = true;
    done();
  });
  return flag;
}

/** How often a stopping app closes connections that went idle since it began to stop. */
const IDLE_SWEEP_MS = 100;

/**
 * A stopping app takes no new requests, and those in flight finish. Fastify closes the connections idle when it
 * begins; a keep-alive connection whose call ends later (a stream says `connection: keep-alive` itself) would stay
 * open until the client's own timeout, so those are closed as soon as they go idle too, until the server has closed.
 */
function closeIdleConnectionsWhileStopping(app: FastifyInstance): void {
  app.addHook('preClose', async () => {
    if (!app.server.listening) return;
    const sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
    app.server.once('close', () => clearInterval(sweep));
  });
}
