// The page every dashboard answer shares: system fonts only, a skip link, one nav, the sign-out form, and a
// Content-Security-Policy that lets only this response's own inline style and script run (nonce).
import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { Html, html } from './html.ts';

export type Section = 'wallet' | 'keys' | 'management-keys' | 'usage' | 'videos' | 'audit';

const NAV: { section: Section; label: string; path: string }[] = [
  { section: 'wallet', label: 'Wallet', path: '/dashboard/wallet' },
  { section: 'keys', label: 'API keys', path: '/dashboard/keys' },
  { section: 'management-keys', label: 'Management keys', path: '/dashboard/management-keys' },
  { section: 'usage', label: 'Usage', path: '/dashboard/usage' },
  { section: 'videos', label: 'Videos', path: '/dashboard/videos' },
  { section: 'audit', label: 'Audit trail', path: '/dashboard/audit' },
];

const STYLE = `
:root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; line-height: 1.45; }
body { margin: 0; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: Canvas; padding: .5rem; }
header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .75rem 1.25rem; border-bottom: 1px solid #8884; }
header nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: 0; }
header nav a[aria-current="page"] { font-weight: 700; text-decoration: none; }
header form { margin-left: auto; }
main { padding: 1rem 1.25rem 3rem; max-width: 72rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid #8884; padding: .3rem .6rem; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
fieldset { border: 1px solid #8886; margin: 1rem 0; max-width: 40rem; }
label { display: block; margin: .4rem 0 .1rem; }
input, select, button { font: inherit; }
.secret { font-family: ui-monospace, monospace; word-break: break-all; background: #8882; padding: .2rem .4rem; }
.notice { border-left: 4px solid #c80; padding: .5rem .8rem; background: #c801; }
.ok { border-left: 4px solid #080; padding: .5rem .8rem; background: #0801; }
.error { border-left: 4px solid #c00; padding: .5rem .8rem; background: #c001; }
/* At phone width the page never scrolls sideways: wide tables and the chart scroll inside their own box. */
.scroll { overflow-x: auto; max-width: 100%; }
figure { margin: 1rem 0; }
.chart { display: block; width: 100%; min-width: 480px; max-width: 760px; height: auto; }
fieldset { min-width: 0; }
input, select { max-width: 100%; box-sizing: border-box; }
main code { overflow-wrap: anywhere; }
.usd { color: GrayText; white-space: nowrap; }
@media (max-width: 40rem) { main { padding: .75rem .75rem 2rem; } header { padding: .5rem .75rem; } }
.legend svg { margin-left: .6em; }
`;

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

export function page(opts: PageOptions, nonce: string): Html {
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
      ? html`<nav aria-label="Dashboard"><ul>${NAV.map(
          (n) => html`<li><a href="${n.path}"${n.section === s.section ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
        )}</ul></nav>
  <form method="post" action="/dashboard/sign-out">${csrfField(s.csrfToken)}<button type="submit">Sign out</button></form>`
      : ''
  }
</header>
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
const TRUSTED_STYLE = new Html(STYLE);
const TRUSTED_SCRIPT = new Html(COPY_SCRIPT);

/** The hidden field every form of a signed-in page carries (checked on each POST). */
export const csrfField = (token: string): Html => html`<input type="hidden" name="csrf" value="${token}">`;

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
    .send(page(opts, nonce).text);
}
