// The doors in and out: the link's page (a button, so a mail scanner that fetches the link does not spend
// it), the POST that spends the token and sets the cookie, and sign-out.
import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.ts';
import { html } from './html.ts';
import { uiFor } from './i18n.ts';
import { sendPage } from './layout.ts';
import { formOf, queryText } from './form.ts';
import { checkSameOrigin, clearSessionCookie, sessionOf, sessionSecretOf, setSessionCookie } from './session-http.ts';
import type { SessionStore } from './sessions.ts';
import { SIGN_IN_PATH } from './sign-in-route.ts';

const SIGNED_OUT_PATH = '/dashboard/signed-out';

/** Sign-in pages: reachable without a session. */
export function registerSignInPages(scope: FastifyInstance, sessions: SessionStore): void {
  scope.get(SIGN_IN_PATH, async (req, reply) => {
    const { t } = uiFor(req);
    const token = queryText(req.query, 'token', 100);
    if (!token) throw errors.invalidRequest(t('signin.needs_link'));
    return sendPage(reply, 200, {
      title: t('signin.title'),
      body: html`<p>${t('signin.intro')}</p>
<form method="post" action="${SIGN_IN_PATH}">
<input type="hidden" name="token" value="${token}">
<button type="submit">${t('signin.button')}</button>
</form>`,
    });
  });

  // Where sign-out leads (post/redirect/get): open to anyone, since the session is gone by then.
  scope.get(SIGNED_OUT_PATH, async (req, reply) => {
    const { t } = uiFor(req);
    return sendPage(reply, 200, { title: t('signout.title'), body: html`<p>${t('signout.body')}</p>` });
  });

  scope.post(SIGN_IN_PATH, async (req, reply) => {
    checkSameOrigin(req);
    const { t } = uiFor(req);
    const token = formOf(req.body).token;
    if (typeof token !== 'string' || token === '' || token.length > 100) throw errors.invalidRequest(t('signin.no_token'));
    const opened = await sessions.redeem(token);
    if (!opened) throw errors.authentication(t('signin.dead_link'));
    setSessionCookie(reply, req, opened.secret, sessions.sessionSeconds);
    return reply.code(303).header('location', '/dashboard/wallet').send();
  });
}

/** Sign-out: a change like any other, so it runs behind the session guard and its CSRF check. */
export function registerSignOut(scope: FastifyInstance, sessions: SessionStore): void {
  scope.post('/dashboard/sign-out', async (req, reply) => {
    sessionOf(req);
    const secret = sessionSecretOf(req);
    if (secret) await sessions.end(secret);
    clearSessionCookie(reply, req);
    return reply.code(303).header('location', SIGNED_OUT_PATH).send();
  });
}
