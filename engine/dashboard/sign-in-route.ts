// POST /admin/v1/wallets/{id}/sign-in-link: a one-time link signing the wallet's current owner in to the dashboard
// (`gateway wallet sign-in-link`). Its origin is GATEWAY_PUBLIC_URL when set, since behind a proxy the request's own
// origin is not the address owners reach.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type AdminCredentials, acceptedTokens, requireAdminToken } from '../admin/admin-token.ts';
import { errors } from '../core/errors.ts';
import { installErrorHandler } from '../http/reply-error.ts';
import type { SessionStore, SignInLink } from './sessions.ts';

interface SignInRouteDeps extends AdminCredentials {
  sessions: SessionStore;
  /** GATEWAY_PUBLIC_URL, when set. */
  publicUrl?: string | undefined;
}

export const SIGN_IN_PATH = '/dashboard/sign-in';

function signInUrl(origin: string, link: SignInLink): string {
  return `${origin.replace(/\/+$/, '')}${SIGN_IN_PATH}?token=${encodeURIComponent(link.token)}`;
}

export function signInLinkAnswer(origin: string, link: SignInLink) {
  return { wallet_id: link.walletId, url: signInUrl(origin, link), expires_at: link.expiresAt.toISOString() };
}

const requestOrigin = (req: FastifyRequest) => `${req.protocol}://${req.headers.host ?? '127.0.0.1'}`;

export async function registerSignInLinkRoute(app: FastifyInstance, deps: SignInRouteDeps): Promise<void> {
  if (acceptedTokens(deps).length === 0) return;
  await app.register(async (scope) => {
    installErrorHandler(scope);
    scope.addHook('onRequest', requireAdminToken(deps));
    scope.post<{ Params: { id: string } }>('/admin/v1/wallets/:id/sign-in-link', async (req, reply) => {
      if (req.body !== undefined && req.body !== null && (typeof req.body !== 'object' || Object.keys(req.body).length > 0)) {
        throw errors.invalidRequest('This route takes no body fields.');
      }
      const link = await deps.sessions.issueSignIn(req.params.id);
      if (!link) throw errors.notFound(`No wallet '${req.params.id}'.`);
      return reply.code(201).send(signInLinkAnswer(deps.publicUrl || requestOrigin(req), link));
    });
  });
}
