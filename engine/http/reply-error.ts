// Errors on the way out: anything thrown inside a route becomes a GatewayError, rendered in the
// door's shape. installErrorHandler puts the one handler on the app and on every scope that can
// also be mounted on a bare Fastify app (the key doors and the admin API are, in their tests).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors, GatewayError, renderError, toGatewayError, type ErrorShape } from '../core/errors.ts';
import { CLIENT_CLOSED_REQUEST } from './access-log.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The error shape of the door a route serves; routes without one answer in the chat shape. */
    errorShape?: ErrorShape;
  }
}

/** Fastify's own errors (bad JSON, too large) become 400/413; anything unknown becomes 503. */
export function fromThrown(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = err as { statusCode?: number; code?: string; message?: string };
  if (e.statusCode === 413 || e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return errors.tooLarge('The request body is too large.');
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return errors.invalidRequest(`Malformed request: ${e.message ?? 'invalid body'}.`);
  }
  return toGatewayError(err);
}

export function sendError(reply: FastifyReply, err: GatewayError, shape: ErrorShape = 'chat'): FastifyReply {
  const rendered = renderError(err, shape);
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}

/** Whatever a route of this scope throws is answered in its door's error shape; a 5xx is logged. */
export function installErrorHandler(scope: FastifyInstance): void {
  scope.setErrorHandler((err, req, reply) => {
    // Nobody is left to answer (an answer piped to a client that hung up fails as its source is torn down):
    // not a failure of the gateway's, and not worth an error line for every listener who left.
    if (reply.raw.destroyed) {
      req.log.info({ err: { message: (err as Error).message } }, 'client left before the answer ended');
      return reply.code(CLIENT_CLOSED_REQUEST).send();
    }
    const gatewayError = fromThrown(err);
    if (gatewayError.status >= 500) req.log.error({ err }, 'request failed');
    return sendError(reply, gatewayError, req.routeOptions.config?.errorShape ?? 'chat');
  });
}
