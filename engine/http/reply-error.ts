// Errors on the way out: anything thrown inside a route becomes a GatewayError, rendered in the
// door's error body. installErrorHandler puts the one handler on the app and on every scope that can
// also be mounted on a bare Fastify app (the key doors and the admin API are, in their tests).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorBody, errors, GatewayError, renderError, toGatewayError } from '../core/errors.ts';
import { CLIENT_CLOSED_REQUEST } from './access-log.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The error body of the door a route serves; routes without one answer in the gateway's own. */
    errorBody?: ErrorBody;
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

/**
 * Fastify's refusals of a body, said with what the client can change: a body past the limit names the limit and
 * the operator's setting for it, and a content type no parser of the route takes names the one it does.
 */
function bodyRefusal(err: unknown, req: FastifyRequest): GatewayError | null {
  const e = err as { statusCode?: number; code?: string };
  if (e.statusCode === 413 || e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = req.routeOptions.bodyLimit;
    return errors.tooLarge(
      `The request body is too large: this gateway takes at most ${limit.toLocaleString('en-US')} bytes ` +
        `(${(limit / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MiB), set by body_limit_bytes in config/limits.yaml.`,
    );
  }
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' && req.server.hasContentTypeParser('application/json')) {
    return errors.invalidRequest(
      `The request body must be JSON, sent with content-type: application/json (this one was ${req.headers['content-type'] || 'not said'}).`,
    );
  }
  return null;
}

export function sendError(reply: FastifyReply, err: GatewayError, body?: ErrorBody): FastifyReply {
  const rendered = renderError(err, body);
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}

/** Whatever a route of this scope throws is answered in its door's error body; a 5xx is logged. */
export function installErrorHandler(scope: FastifyInstance): void {
  scope.setErrorHandler((err, req, reply) => {
    // Nobody is left to answer (an answer piped to a client that hung up fails as its source is torn down):
    // not a failure of the gateway's, and not worth an error line for every listener who left.
    if (reply.raw.destroyed) {
      req.log.info({ err: { message: (err as Error).message } }, 'client left before the answer ended');
      return reply.code(CLIENT_CLOSED_REQUEST).send();
    }
    const gatewayError = bodyRefusal(err, req) ?? fromThrown(err);
    // A refusal the gateway expects (a deploy stopping it) is no failure: an error line for each would page an operator.
    if (gatewayError.expected) req.log.warn({ status: gatewayError.status, reason: gatewayError.message }, 'request refused');
    else if (gatewayError.status >= 500) req.log.error({ err }, 'request failed');
    return sendError(reply, gatewayError, req.routeOptions.config?.errorBody);
  });
}
