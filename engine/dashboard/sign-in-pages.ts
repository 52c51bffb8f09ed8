// The doors in and out: the link's page (a button, so a mail scanner that fetches the link does not spend
// it), the POST that spends the token and sets the cookie, and sign-out. With an identity provider configured
// the sign-in page without a token offers it instead (oidc-pages.ts does the rest).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.ts';
import { html } from './html.ts';
import { sendPage } from './layout.ts';
import { formOf, queryText } from './form.ts';
import { checkSameOrigin, clearSessionCookie, sessionOf, sessionSecretOf, setSessionCookie } from './session-http.ts';
import type { SessionStore } from './sessions.ts';
import { SIGN_IN_PATH } from './sign-in-route.ts';

export const SIGNED_OUT_PATH = '/dashboard/signed-out';
/** Where sign-in through the identity provider begins (oidc-pages.ts serves it). */
export const OIDC_START_PATH = '/dashboard/oidc/start';

/** Sign-in pages: reachable without a session. `providerName`: the identity provider's, when one is configured. */
export function registerSignInPages(scope: FastifyInstance, sessions: SessionStore, providerName?: string): void {
  // A link, not a form: the page's CSP allows forms to post only to this origin, and leaving for the provider is a redirect.
  const viaProvider = providerName ? html`<p><a class="button" href="${OIDC_START_PATH}">Sign in with ${providerName}</a></p>` : '';
  scope.get(SIGN_IN_PATH, async (req, reply) => {
    const token = queryText(req.query, 'token', 100);
    if (!token && providerName) return sendPage(reply, 200, { title: 'Sign in', body: html`${viaProvider}` });
    if (!token) throw errors.invalidRequest('This address needs the sign-in link your operator gave you.');
    return sendPage(reply, 200, {
      title: 'Sign in',
      body: html`<p>This one-time link opens the dashboard of your wallet in this browser.</p>
<form method="post" action="${SIGN_IN_PATH}">
<input type="hidden" name="token" value="${token}">
<button type="submit">Sign in</button>
</form>`,
    });
  });

  // Where sign-out leads (post/redirect/get): open to anyone, since the session is gone by then.
  scope.get(SIGNED_OUT_PATH, async (_req, reply) =>
    sendPage(reply, 200, {
      title: 'Signed out',
      body: providerName
        ? html`<p>You are signed out.</p>${viaProvider}`
        : html`<p>You are signed out. To come back, ask your operator for a new sign-in link.</p>`,
    }),
  );

  scope.post(SIGN_IN_PATH, async (req, reply) => {
    checkSameOrigin(req);
    const token = formOf(req.body).token;
    if (typeof token !== 'string' || token === '' || token.length > 100) throw errors.invalidRequest('The sign-in form lacks its token.');
    const opened = await sessions.redeem(token);
    if (!opened) {
      throw errors.authentication(
        'This sign-in link does not work: it was used already, it expired (links last 15 minutes), or the wallet changed owner. Ask your operator for a new one.',
      );
    }
    setSessionCookie(reply, req, opened.secret, sessions.sessionSeconds);
    return reply.code(303).header('location', '/dashboard/wallet').send();
  });
}

/**
 * Sign-out: a change like any other, so it runs behind the session guard and its CSRF check. `thenTo` may name
 * where the browser goes next (the identity provider's own sign-out, oidc-pages.ts), else the signed-out page.
 * That one is reached by a page's Refresh, not a 303: the pages' CSP allows forms to lead only to this origin,
 * and the browser holds a form's redirects to it too.
 */
export function registerSignOut(scope: FastifyInstance, sessions: SessionStore, thenTo?: (req: FastifyRequest, via: 'link' | 'provider') => Promise<string | null>): void {
  scope.post('/dashboard/sign-out', async (req, reply) => {
    const { via } = sessionOf(req);
    const secret = sessionSecretOf(req);
    if (secret) await sessions.end(secret);
    clearSessionCookie(reply, req);
    const next = await thenTo?.(req, via);
    if (!next) return reply.code(303).header('location', SIGNED_OUT_PATH).send();
    reply.header('refresh', `0; url=${next}`);
    return sendPage(reply, 200, {
      title: 'Signed out',
      body: html`<p role="status">You are signed out of the dashboard. Signing you out of your school account too…</p>
<p><a href="${next}">Continue</a></p>`,
    });
  });
}
