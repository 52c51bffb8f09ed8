// The language switch every page shows: a one-button form naming the other language in that language, which
// POSTs here, sets the `lang` cookie (it wins over Accept-Language, i18n.ts) and redirects back to the page it
// came from (post/redirect/get, like every other form). Open without a session, so the sign-in pages have it
// too; a language is no secret and changes nothing else, so the same-origin check is all it needs (no CSRF
// token, which a signed-out page does not have).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formOf } from './form.ts';
import { type Html, html } from './html.ts';
import { LANG_COOKIE, t, type Ui } from './i18n.ts';
import { isLocale, type Locale } from './locale.ts';
import { checkSameOrigin, cookieOptions } from './session-http.ts';

const LANG_PATH = '/dashboard/lang';
const YEAR_SECONDS = 365 * 86_400;

/**
 * Where the switch leads back to: the page shown, when it is a dashboard page one can GET again. The provider
 * sign-in's pages (oidc-pages.ts) cannot be: their one-time answer is spent, so they lead back to the sign-in page.
 */
function backOf(req: FastifyRequest): string {
  if (req.url.startsWith('/dashboard/oidc/')) return '/dashboard/sign-in';
  return req.method === 'GET' && req.url.startsWith('/dashboard') ? req.url : '/dashboard';
}

/** Only a path of our own dashboard, so the form cannot be made to redirect elsewhere. */
function safeBack(back: string | undefined): string {
  if (!back?.startsWith('/dashboard') || back.startsWith('//')) return '/dashboard';
  const u = new URL(back, 'http://dashboard.invalid');
  return u.host === 'dashboard.invalid' && u.pathname.startsWith('/dashboard') ? `${u.pathname}${u.search}` : '/dashboard';
}

export function langSwitch(ui: Ui, req: FastifyRequest | undefined): Html {
  const other: Locale = ui.locale === 'ko' ? 'en' : 'ko';
  return html`<form method="post" action="${LANG_PATH}" class="lang" aria-label="${ui.t('lang.label')}"><input type="hidden" name="back" value="${req ? backOf(req) : '/dashboard'}">
<button type="submit" name="lang" value="${other}" lang="${other}" data-testid="lang-switch">${t(other, other === 'ko' ? 'lang.ko' : 'lang.en')}</button></form>`;
}

export function registerLangSwitch(scope: FastifyInstance): void {
  scope.post(LANG_PATH, async (req, reply) => {
    checkSameOrigin(req);
    const form = formOf(req.body);
    const lang = isLocale(form.lang) ? form.lang : 'en';
    // Not HttpOnly, as before: a language is no secret.
    reply.setCookie(LANG_COOKIE, lang, { ...cookieOptions(req, 'lax', false), maxAge: YEAR_SECONDS });
    return reply.code(303).header('location', safeBack(form.back)).send();
  });
}
