// The Fastify app every room registers its routes on: the body limit, the one error handler, and the
// answer for a path no room serves.
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { errors } from '../core/errors.ts';
import { installErrorHandler, sendError } from './reply-error.ts';

export function createApp(opts: FastifyServerOptions = {}): FastifyInstance {
  const app = Fastify({ logger: false, ...opts });
  installErrorHandler(app);
  app.setNotFoundHandler((req, reply) => {
    sendError(reply, errors.notFound(`No door at ${req.method} ${req.url.split('?')[0]}.`), 'chat');
  });
  return app;
}
