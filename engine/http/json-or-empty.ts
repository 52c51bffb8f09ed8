// The management doors' body parser: JSON, or no body at all (a DELETE sent with a JSON content type, as some
// clients do); malformed JSON is a 400 in the door's shape rather than fastify's own error.
import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.ts';

export function parseJsonOrEmpty(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, raw, done) => {
    const text = String(raw);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(errors.invalidRequest('The request body is not valid JSON.'), undefined);
    }
  });
}
