// The one check of the operator's credentials, shared by every admin route (the admin API here and the
// dashboard's sign-in-link route): `Authorization: Bearer <token>`, compared in constant time.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.ts';

const sha = (s: string) => createHash('sha256').update(s).digest();

export function tokenMatches(given: string, expected: string): boolean {
  return timingSafeEqual(sha(given), sha(expected));
}

const bearerOf = (h: string | string[] | undefined): string | null => {
  const m = typeof h === 'string' ? /^Bearer\s+(.+)$/i.exec(h.trim()) : null;
  return m ? m[1]!.trim() : null;
};

/** Whether `given` is one of `tokens` (empty ones never match). */
function anyTokenMatches(given: string, tokens: readonly string[]): boolean {
  // Every token is compared, so the time taken does not tell which one came close.
  return tokens.map((t) => t !== '' && tokenMatches(given, t)).includes(true);
}

/** Whether an Authorization header carries one of `tokens`. */
function carriesAdminToken(authorization: string | string[] | undefined, tokens: readonly string[]): boolean {
  const given = bearerOf(authorization);
  return given !== null && anyTokenMatches(given, tokens);
}

/** What an admin route accepts: GATEWAY_ADMIN_TOKEN, and this start's credential for the operator tools. */
export interface AdminCredentials {
  adminToken?: string | undefined;
  localToken?: string | undefined;
}

export const acceptedTokens = (c: AdminCredentials): string[] => [c.adminToken, c.localToken].filter((t): t is string => !!t);

/** Whether a request carries an accepted token: for answers that say more to the operator (GET /openapi.json). */
export function isFromOperator(credentials: AdminCredentials): (req: FastifyRequest) => boolean {
  const tokens = acceptedTokens(credentials);
  return (req) => carriesAdminToken(req.headers.authorization, tokens);
}

/**
 * An onRequest hook that lets through only a request carrying an accepted token. With GATEWAY_ADMIN_TOKEN set
 * the operator knows the admin API is there, so a missing or wrong token is told 401. Without it the API is
 * only the local tools' (operations.md: "Unset: the admin routes answer 404"), so anyone else gets the app's
 * own 404, the same answer as a path no route serves.
 */
export function requireAdminToken(credentials: AdminCredentials): (req: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const tokens = acceptedTokens(credentials);
  const announced = !!credentials.adminToken;
  return async (req, reply) => {
    const given = bearerOf(req.headers.authorization);
    if (given !== null && anyTokenMatches(given, tokens)) return;
    if (!announced) {
      reply.callNotFound();
      return reply;
    }
    if (given === null) throw errors.authentication('Send the admin token as Authorization: Bearer <GATEWAY_ADMIN_TOKEN>.');
    throw errors.authentication('The admin token is not valid.');
  };
}
