// The owner's dashboard, server-rendered HTML with plain forms so it works without JavaScript. Every page but the
// sign-in ones sits behind the session guard (401, 403 by role, CSRF on every POST), and every query is scoped by
// the session's wallet, so another wallet's ids answer 404.
import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.ts';
import { fromThrown } from '../http/reply-error.ts';
import { registerAuditPage } from './audit-page.ts';
import { NewKeysFlash, registerCreatedKeysPages } from './created-keys-page.ts';
import type { DashboardDeps } from './deps.ts';
import { parseForm } from './form.ts';
import { checkGroupScope, groupScopeOf } from './group-scope.ts';
import { registerGroupsPage } from './groups-page.ts';
import { html } from './html.ts';
import { type MessageKey, requestCurrency, saysLocale, uiFor } from './i18n.ts';
import { registerKeysPage } from './keys-page.ts';
import { registerLangSwitch } from './lang-switch.ts';
import { sendPage } from './layout.ts';
import { registerManagementKeysPage } from './management-keys-page.ts';
import { registerManagersPage } from './managers-page.ts';
import { providerSignOut, registerOidcPages } from './oidc-pages.ts';
import { checkRole } from './roles.ts';
import { attachSession, checkCsrf, isCsrfRefusal, registerCookies, sessionOf, sessionSecretOf } from './session-http.ts';
import { OIDC_START_PATH, registerSignInPages, registerSignOut } from './sign-in-pages.ts';
import { loadWalletSummary } from './summary-strip.ts';
import { registerUsagePage } from './usage-page.ts';
import { registerVideosPage } from './videos-page.ts';
import { registerWalletPage } from './wallet-page.ts';
import { registerWebhooksPage } from './webhooks-page.ts';

const TITLES: Record<number, MessageKey> = { 400: 'error.400', 401: 'error.401', 403: 'error.403', 404: 'error.404', 409: 'error.409' };

export async function registerDashboard(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  await app.register(async (scope) => {
    // HTML forms only: any other body (JSON included) is refused with 4xx before a handler sees it.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, raw, done) => {
      done(null, parseForm(String(raw)));
    });

    // Cookies and CSRF tokens for the dashboard alone (session-http.ts), before any hook below reads a cookie.
    await registerCookies(scope);

    // Every page, the sign-in pages and errors included, shows money in the display currency in force.
    const displayCurrency = deps.displayCurrency;
    if (displayCurrency) scope.addHook('onRequest', async (req) => requestCurrency.set(req, displayCurrency()));

    // Errors are pages too, with the status of the error value; a 5xx says no more than "retry".
    scope.setErrorHandler((err, req, reply) => {
      // The CSRF plugin's own refusal speaks English; the page says it in the request's language.
      const e = isCsrfRefusal(err) ? errors.forbidden(uiFor(req).t('error.csrf')) : fromThrown(err);
      if (e.status >= 500) req.log.error({ err }, 'dashboard request failed');
      let signedIn: { section: null; csrfToken: string; walletId: string } | undefined;
      try {
        const s = sessionOf(req);
        signedIn = { section: null, csrfToken: s.csrfToken, walletId: s.walletId };
      } catch {
        signedIn = undefined;
      }
      const ui = uiFor(req);
      const viaProvider = deps.identity
        ? html`<p>${ui.th('error.via_provider', { href: OIDC_START_PATH, provider: deps.identity.settings.name })}</p>`
        : '';
      const hint = e.status === 401 ? html`${viaProvider}<p>${ui.th('error.sign_in_hint')}</p>` : '';
      const title = ui.t(TITLES[e.status] ?? (e.status >= 500 ? 'error.5xx' : 'error.other'));
      // The dashboard's own refusals come in the page's language; one from the rest of the gateway (English
      // only) is shown under the title in the locale's words, its English text kept as the detail, except a
      // thing not found (a class, a key), which the locale's words say whole: its id is in the address already.
      const message = saysLocale(ui.locale, e.message)
        ? e.message
        : e.status === 404
          ? ui.t('error.not_found')
          : ui.t('error.detail', { message: e.message });
      return sendPage(reply, e.status, { title, signedIn, body: html`<p class="error" role="alert">${message}</p>${hint}` });
    });

    registerSignInPages(scope, deps.sessions, deps.identity?.settings.name);
    registerOidcPages(scope, deps);
    registerLangSwitch(scope);

    await scope.register(async (guarded) => {
      // The session is checked before the body is read, so a stranger cannot make the gateway parse forms.
      guarded.addHook('onRequest', async (req, reply) => {
        const session = await deps.sessions.find(sessionSecretOf(req));
        if (!session) throw errors.authentication(uiFor(req).t('error.not_signed_in'));
        attachSession(req, reply, session);
        // The class scope first: a refused page's navigation reads it, and a teacher never reads as the whole wallet.
        await checkGroupScope(req, deps.db, session);
        checkRole(req);
      });
      // Every change: from this site, with this session's token (a GET changes nothing and needs none).
      guarded.addHook('preHandler', checkCsrf(guarded));
      guarded.addHook('preHandler', async (req) => {
        // The wallet's name for every page's header, and the balance for the summary strip (a wallet gone
        // answers the pages' own 404); a teacher sees their classes only, not the wallet's balance.
        const withBalance = groupScopeOf(req) === null;
        await loadWalletSummary(req, deps.db, deps.ledger, sessionOf(req).walletId, { now: deps.clock.now(), withBalance }).catch(
          () => undefined,
        );
      });
      // Any other /dashboard path, signed in: a page of its own (the app's 404 is JSON).
      guarded.route({
        method: ['GET', 'POST'],
        url: '/dashboard/*',
        handler: async (req) => {
          throw errors.notFound(uiFor(req).t('error.no_page', { path: req.url.split('?')[0] }));
        },
      });
      registerSignOut(guarded, deps.sessions, providerSignOut(deps));
      registerWalletPage(guarded, deps);
      // The create forms and the pages that show their new keys once share one flash.
      const flash = new NewKeysFlash(deps);
      registerCreatedKeysPages(guarded, flash);
      registerKeysPage(guarded, deps, flash);
      registerGroupsPage(guarded, deps, flash);
      registerManagementKeysPage(guarded, deps, flash);
      registerUsagePage(guarded, deps);
      registerVideosPage(guarded, deps);
      registerAuditPage(guarded, deps);
      registerManagersPage(guarded, deps);
      registerWebhooksPage(guarded, deps);
    });
  });
}
