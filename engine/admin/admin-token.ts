// The one check of the operator's admin token, shared by every admin route (the admin API here and the
// dashboard's sign-in-link route): `Authorization: Bearer <token>`, compared in constant time.
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { errors } from '../core/errors.ts';

const sha = (s: string) => createHash('sha256').update(s).digest();

export function tokenMatches(given: string, expected: string): boolean {
  return timingSafeEqual(sha(given), sha(expected));
}

/** An onRequest hook that answers 401 unless the request carries one of `tokens`. */
export function requireAdminToken(tokens: readonly string[]): (req: FastifyRequest) => Promise<void> {
  return async (req) => {
    const h = req.headers.authorization;
    const m = typeof h === 'string' ? /^Bearer\s+(.+)$/i.exec(h.trim()) : null;
    if (!m) throw errors.authentication('Send the admin token as Authorization: Bearer <GATEWAY_ADMIN_TOKEN>.');
    const given = m[1].trim();
    // Every token is compared, so the time taken does not tell which one came close.
    if (!tokens.map((t) => tokenMatches(given, t)).includes(true)) throw errors.authentication('The admin token is not valid.');
  };
}
