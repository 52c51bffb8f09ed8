// The one check of the operator's admin token, shared by every admin route (the admin API here and the
// dashboard's sign-in-link route): `Authorization: Bearer <token>`, compared in constant time.
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { errors } from '../core/errors.ts';

const sha = (s: string) => createHash('sha256').update(s).digest();

export function tokenMatches(given: string, expected: string): boolean {
  return timingSafeEqual(sha(given), sha(expected));
}

const bearerOf = (h: string | string[] | undefined): string | null => {
  const m = typeof h === 'string' ? /^Bearer\s+(.+)$/i.exec(h.trim()) : null;
  return m ? m[1].trim() : null;
};

/** Whether `given` is one of `tokens` (empty ones never match). */
function anyTokenMatches(given: string, tokens: readonly string[]): boolean {
  // Every token is compared, so the time taken does not tell which one came close.
  return tokens.map((t) => t !== '' && tokenMatches(given, t)).includes(true);
}

/** Whether an Authorization header carries one of `tokens` (for answers that say more to the operator). */
export function carriesAdminToken(authorization: string | string[] | undefined, tokens: readonly string[]): boolean {
  const given = bearerOf(authorization);
  return given !== null && anyTokenMatches(given, tokens);
}

/** An onRequest hook that answers 401 unless the request carries one of `tokens`. */
export function requireAdminToken(tokens: readonly string[]): (req: FastifyRequest) => Promise<void> {
  return async (req) => {
    const given = bearerOf(req.headers.authorization);
    if (given === null) throw errors.authentication('Send the admin token as Authorization: Bearer <GATEWAY_ADMIN_TOKEN>.');
    if (!anyTokenMatches(given, tokens)) throw errors.authentication('The admin token is not valid.');
  };
}
