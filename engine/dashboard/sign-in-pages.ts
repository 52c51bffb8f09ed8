// The doors in and out: the link's page (a button, so a mail scanner that fetches the link does not spend
// it), the POST that spends the token and sets the cookie, and sign-out. With an identity provider configured
// the sign-in page without a token offers it instead (oidc-pages.ts does the rest).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.ts';
import { formOf, queryText } from './form.ts';
import { html } from './html.ts';
import { type Ui, uiFor } from './i18n.ts';
import { sendPage } from './layout.ts';
import { checkSameOrigin, clearSessionCookies, sessionOf, sessionSecretOf, setSessionCookie } from './session-http.ts';
import type { SessionStore } from './sessions.ts';
import { SIGN_IN_PATH } from './sign-in-route.ts';

export const SIGNED_OUT_PATH = '/dashboard/signed-out';
/** Where sign-in through the identity provider begins (oidc-pages.ts serves it). */
export const OIDC_START_PATH = '/dashboard/oidc/start';

/** Sign-in pages: reachable without a session. `providerName`: the identity provider's, when one is configured. */
export function registerSignInPages(scope: FastifyInstance, sessions: SessionStore, providerName?: string): void {
  // A link, not a form: the page's CSP allows forms to post only to this origin, and leaving for the provider is a redirect.
  const viaProvider = (ui: Ui) =>
    providerName
      ? html`<p><a class="button" href="${OIDC_START_PATH}">${ui.t('oidc.sign_in_with', { provider: providerName })}</a></p>`
      : '';
  scope.get(SIGN_IN_PATH, async (req, reply) => {
    const ui = uiFor(req);
    const { t } = ui;
    const token = queryText(req.query, 'token', 100);
    if (!token && providerName) return sendPage(reply, 200, { title: t('signin.title'), body: html`${viaProvider(ui)}` });
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
    const ui = uiFor(req);
    const { t } = ui;
    return sendPage(reply, 200, {
      title: t('signout.title'),
      body: providerName ? html`<p>${t('signout.body_provider')}</p>${viaProvider(ui)}` : html`<p>${t('signout.body')}</p>`,
    });
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

/**
 * Sign-out: a change like any other, so it runs behind the session guard and its CSRF check. `thenTo` may name
 * where the browser goes next (the identity provider's own sign-out, oidc-pages.ts), else the signed-out page.
 * That one is reached by a page's Refresh, not a 303: the pages' CSP allows forms to lead only to this origin,
 * and the browser holds a form's redirects to it too.
 */
export function registerSignOut(
  scope: FastifyInstance,
  sessions: SessionStore,
  thenTo?: (req: FastifyRequest, via: 'link' | 'provider') => Promise<string | null>,
): void {
  scope.post('/dashboard/sign-out', async (req, reply) => {
    const { via } = sessionOf(req);
    const secret = sessionSecretOf(req);
    if (secret) await sessions.end(secret);
    clearSessionCookies(reply, req);
    const next = await thenTo?.(req, via);
    if (!next) return reply.code(303).header('location', SIGNED_OUT_PATH).send();
    reply.header('refresh', `0; url=${next}`);
    const { t } = uiFor(req);
    return sendPage(reply, 200, {
      title: t('signout.title'),
      body: html`<p role="status">${t('signout.at_provider')}</p>
<p><a href="${next}">${t('signout.continue')}</a></p>`,
    });
  });
}
