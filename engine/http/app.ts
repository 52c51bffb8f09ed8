// The Fastify app every room registers its routes on: the body limit, the bound on JSON depth, the one
// error handler, and the answer for a path no room serves.
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { errors } from '../core/errors.ts';
import { depthRefusal } from './json-depth.ts';
import { installErrorHandler, sendError } from './reply-error.ts';

export interface BodyBounds {
  /** The deepest nesting a JSON body may have (limits.json_max_depth), read at each request. */
  jsonMaxDepth: () => number;
}

export function createApp(bounds: BodyBounds, opts: FastifyServerOptions = {}): FastifyInstance {
  const app = Fastify({ logger: false, ...opts });
  installErrorHandler(app);
  // On the root, so every route of every room gets it (the key doors parse JSON in their own scope): a
  // parsed JSON body is bounded before any handler walks it.
  app.addHook('preValidation', async (req) => {
    const refusal = depthRefusal(req.body, bounds.jsonMaxDepth());
    if (refusal) throw refusal;
  });
  app.setNotFoundHandler((req, reply) => {
    sendError(reply, errors.notFound(`No door at ${req.method} ${req.url.split('?')[0]}.`), 'chat');
  });
  return app;
}
