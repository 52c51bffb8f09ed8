// Errors on the way out: anything thrown inside a route becomes a GatewayError, rendered in the
// door's shape. Every route scope (doors, key doors, admin) uses these two functions.
import type { FastifyReply } from 'fastify';
import { errors, GatewayError, renderError, toGatewayError, type ErrorShape } from '../core/errors.ts';

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
