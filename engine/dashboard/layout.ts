// The page every dashboard answer shares: system fonts only, a skip link, one nav, the sign-out form, and a
// Content-Security-Policy that lets only this response's own inline style and script run (nonce).
import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { Html, html } from './html.ts';
import { DASHBOARD_STYLE } from './style.ts';
import { summaryStrip } from './summary-strip.ts';
import { permissionOf, sessionMay } from './roles.ts';

export type Section = 'wallet' | 'keys' | 'management-keys' | 'usage' | 'videos' | 'audit' | 'managers' | 'webhooks';

const NAV: { section: Section; label: string; path: string }[] = [
  { section: 'wallet', label: 'Wallet', path: '/dashboard/wallet' },
  { section: 'keys', label: 'API keys', path: '/dashboard/keys' },
  { section: 'management-keys', label: 'Management keys', path: '/dashboard/management-keys' },
  { section: 'usage', label: 'Usage', path: '/dashboard/usage' },
  { section: 'videos', label: 'Videos', path: '/dashboard/videos' },
  { section: 'audit', label: 'Audit trail', path: '/dashboard/audit' },
  { section: 'webhooks', label: 'Alerts', path: '/dashboard/webhooks' },
  { section: 'managers', label: 'Managers', path: '/dashboard/managers' },
];


// Copies the text of the element a button names; falls back to selecting it where the clipboard API is absent.
const COPY_SCRIPT = `
document.querySelectorAll('button[data-copy]').forEach(function (b) {
  b.hidden = false;
  b.addEventListener('click', function () {
    var el = document.getElementById(b.getAttribute('data-copy'));
    var text = el.textContent;
    var done = function () { b.textContent = 'Copied'; };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, function () {});
    else { var r = document.createRange(); r.selectNodeContents(el); var s = getSelection(); s.removeAllRanges(); s.addRange(r); document.execCommand('copy'); done(); }
  });
});`;

export interface PageOptions {
  title: string;
  /** The signed-in owner's section and CSRF token; absent on the sign-in pages. */
  signedIn?: { section: Section | null; csrfToken: string; walletId: string };
  body: Html;
}

/** The page; `may` says which nav entries the session's role may open (one it would be refused is not offered). */
export function page(opts: PageOptions, nonce: string, strip: Html | '' = '', may: (path: string) => boolean = () => true): Html {
  const s = opts.signedIn;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${opts.title} · Gateway dashboard</title>
<style nonce="${nonce}">${TRUSTED_STYLE}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
  <strong>Gateway dashboard</strong>
  ${
    s
      ? html`<nav aria-label="Dashboard"><ul>${NAV.filter((n) => may(n.path)).map(
          (n) => html`<li><a href="${n.path}"${n.section === s.section ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
        )}</ul></nav>
  <form method="post" action="/dashboard/sign-out">${csrfField(s.csrfToken)}<button type="submit">Sign out</button></form>`
      : ''
  }
</header>
${s ? strip : ''}
<main id="main">
<h1>${opts.title}</h1>
${s ? html`<p>Wallet <code>${s.walletId}</code></p>` : ''}
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
      return sessionMay(reply.request, permissionOf('GET', path));
    } catch {
      return true;
    }
  };
}

/** Sends a page with the headers every dashboard answer carries. */
export function sendPage(reply: FastifyReply, status: number, opts: PageOptions): FastifyReply {
  const nonce = randomBytes(16).toString('base64');
  return reply
    .code(status)
    .headers({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on our own form posts.
      'referrer-policy': 'same-origin',
      'content-security-policy':
        `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src 'self' data:; ` +
        `form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    })
    .send(page(opts, nonce, summaryStrip(reply.request), mayOpen(reply)).text);
}
