// Closing a key is for good, so the list's "Close" button only opens this page (a GET: nothing changes), and
// only its form carries `confirm=yes`. A close POST without it (an old page, a stray click) is sent back here
// rather than acted on. Plain forms, so it works without JavaScript.
import type { FastifyReply } from 'fastify';
import type { FormBody } from './form.ts';
import { type Html, html } from './html.ts';
import { type Ui, uiFor } from './i18n.ts';
import { csrfField, type Section, sendPage } from './layout.ts';
import type { SignedInSession } from './session-http.ts';

export const isConfirmed = (form: FormBody): boolean => form.confirm === 'yes';

/** The button that leads to the confirmation page (a GET form, so it looks like the other buttons). */
export const closeButton = (ui: Ui, confirmPath: string, label: string): Html =>
  html`<form method="get" action="${confirmPath}"><button type="submit">${ui.t('close.button', { label })}</button></form>`;

export function sendCloseConfirmation(
  reply: FastifyReply,
  s: SignedInSession,
  what: { section: Section; kindText: string; label: string; consequence: string; closePath: string; backPath: string },
): FastifyReply {
  const ui = uiFor(reply.request);
  return sendPage(reply, 200, {
    title: ui.t('close.title', { label: what.label }),
    signedIn: { section: what.section, csrfToken: s.csrfToken, walletId: s.walletId },
    body: html`<p class="notice" role="alert">${ui.th('close.notice', { kind: what.kindText, label: what.label, consequence: what.consequence })}</p>
<form method="post" action="${what.closePath}">${csrfField(s.csrfToken)}<input type="hidden" name="confirm" value="yes">
<p><button type="submit">${ui.t('close.yes', { label: what.label })}</button> <a href="${what.backPath}">${ui.t('close.no')}</a></p>
</form>`,
  });
}
