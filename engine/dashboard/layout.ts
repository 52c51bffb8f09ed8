// The page every dashboard answer shares: system fonts only, a skip link, one nav, the sign-out form, and a
// Content-Security-Policy that lets only this response's own inline style and script run (nonce).
import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { scopeAllows } from './group-scope.ts';
import { Html, html } from './html.ts';
import { type MessageKey, type Ui, uiFor } from './i18n.ts';
import { langSwitch } from './lang-switch.ts';
import { permissionOf, sessionMay } from './roles.ts';
import { DASHBOARD_STYLE } from './style.ts';
import { summaryStrip, walletNameFor } from './summary-strip.ts';

export type Section = 'wallet' | 'keys' | 'groups' | 'management-keys' | 'usage' | 'videos' | 'audit' | 'managers' | 'webhooks';

const NAV: { section: Section; label: MessageKey; path: string }[] = [
  { section: 'wallet', label: 'nav.wallet', path: '/dashboard/wallet' },
  { section: 'keys', label: 'nav.keys', path: '/dashboard/keys' },
  { section: 'groups', label: 'nav.groups', path: '/dashboard/groups' },
  { section: 'management-keys', label: 'nav.management_keys', path: '/dashboard/management-keys' },
  { section: 'usage', label: 'nav.usage', path: '/dashboard/usage' },
  { section: 'videos', label: 'nav.videos', path: '/dashboard/videos' },
  { section: 'audit', label: 'nav.audit', path: '/dashboard/audit' },
  { section: 'webhooks', label: 'nav.webhooks', path: '/dashboard/webhooks' },
  { section: 'managers', label: 'nav.managers', path: '/dashboard/managers' },
];

// Copies the text of the element a button names; falls back to selecting it where the clipboard API is absent.
// The button then says the locale's "Copied", which the page carries in data-copied (the script has no texts).
const COPY_SCRIPT = `
document.querySelectorAll('button[data-copy]').forEach(function (b) {
  b.hidden = false;
  b.addEventListener('click', function () {
    var el = document.getElementById(b.getAttribute('data-copy'));
    var text = el.textContent;
    var done = function () { b.textContent = document.body.getAttribute('data-copied'); };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, function () {});
    else { var r = document.createRange(); r.selectNodeContents(el); var s = getSelection(); s.removeAllRanges(); s.addRange(r); document.execCommand('copy'); done(); }
  });
});`;

interface PageOptions {
  title: string;
  /** The signed-in owner's section and CSRF token; absent on the sign-in pages. */
  signedIn?: { section: Section | null; csrfToken: string; walletId: string } | undefined;
  body: Html;
}

/** The page; `chrome.may` says which nav entries the session's role may open (one it would be refused is not offered). */
function page(
  opts: PageOptions,
  nonce: string,
  ui: Ui,
  chrome: { strip: Html | ''; langSwitch: Html; may?: (path: string) => boolean; walletName?: string | null },
): Html {
  const may = chrome.may ?? (() => true);
  const s = opts.signedIn;
  const { t } = ui;
  return html`<!doctype html>
<html lang="${ui.locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${t('app.title', { title: opts.title })}</title>
<style nonce="${nonce}">${TRUSTED_STYLE}</style>
</head>
<body data-copied="${t('layout.copied')}">
<a class="skip" href="#main">${t('layout.skip')}</a>
<header>
  <strong>${t('app.name')}</strong>
  ${
    s
      ? html`<nav aria-label="${t('layout.nav')}"><ul>${NAV.filter((n) => may(n.path)).map(
          (n) => html`<li><a href="${n.path}"${n.section === s.section ? html` aria-current="page"` : ''}>${t(n.label)}</a></li>`,
        )}</ul></nav>`
      : ''
  }
  ${chrome.langSwitch}
  ${s ? html`<form method="post" action="/dashboard/sign-out">${csrfField(s.csrfToken)}<button type="submit">${t('layout.sign_out')}</button></form>` : ''}
</header>
${s ? chrome.strip : ''}
<main id="main">
<h1>${opts.title}</h1>
${s ? html`<p data-testid="wallet-header">${ui.th('layout.wallet', { wallet: chrome.walletName ? html`<strong data-testid="wallet-name">${chrome.walletName}</strong> <code>${s.walletId}</code>` : html`<code>${s.walletId}</code>` })}</p>` : ''}
${opts.body}
</main>
<script nonce="${nonce}">${TRUSTED_SCRIPT}</script>
</body>
</html>`;
}

// Our own constants, not input: passed through unescaped.
const TRUSTED_STYLE = new Html(DASHBOARD_STYLE);
const TRUSTED_SCRIPT = new Html(COPY_SCRIPT);

/** The hidden field every form of a signed-in page carries (checked on each POST). */
export const csrfField = (token: string): Html => html`<input type="hidden" name="csrf" value="${token}">`;

/** Whether the request's session may open a nav path (always, on pages without a session). */
function mayOpen(reply: FastifyReply): (path: string) => boolean {
  return (path) => {
    try {
      return sessionMay(reply.request, permissionOf('GET', path)) && scopeAllows(reply.request, 'GET', path);
    } catch {
      return true;
    }
  };
}

/** Sends a page with the headers every dashboard answer carries. */
export function sendPage(reply: FastifyReply, status: number, opts: PageOptions): FastifyReply {
  const nonce = randomBytes(16).toString('base64');
  const ui = uiFor(reply.request);
  return reply
    .code(status)
    .headers({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-language': ui.locale,
      // The same address answers in the language the cookie or Accept-Language asks for.
      vary: 'Accept-Language, Cookie',
      'x-content-type-options': 'nosniff',
      // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on our own form posts.
      'referrer-policy': 'same-origin',
      'content-security-policy':
        `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src 'self' data:; ` +
        `form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    })
    .send(
      page(opts, nonce, ui, {
        strip: summaryStrip(reply.request, ui),
        langSwitch: langSwitch(ui, reply.request),
        may: mayOpen(reply),
        walletName: walletNameFor(reply.request),
      }).text,
    );
}
