// Closing a key is for good, and deleting a class takes it from its teachers, so the button only opens a page
// that asks (a GET: nothing changes), and only its form carries `confirm=yes`. A POST without it (an old page, a
// stray click) is sent back here rather than acted on. Plain forms, so it works without JavaScript.
import type { FastifyReply } from 'fastify';
import type { FormBody } from './form.ts';
import { type Html, html } from './html.ts';
import { type Ui, uiFor } from './i18n.ts';
import { csrfField, type Section, sendPage } from './layout.ts';
import type { SignedInSession } from './session-http.ts';

export const isConfirmed = (form: FormBody): boolean => form.confirm === 'yes';

/** The button that leads to the confirmation page (a GET form, so it looks like the other buttons). */
export const closeButton = (ui: Ui, confirmPath: string, label: string): Html =>
  confirmButton(confirmPath, ui.t('close.button', { label }));

export const confirmButton = (confirmPath: string, text: string): Html =>
  html`<form method="get" action="${confirmPath}"><button type="submit">${text}</button></form>`;

/** The page that asks: what happens (`notice`), a yes that posts `confirm=yes` to `actionPath`, a no back. */
export function sendConfirmation(
  reply: FastifyReply,
  s: SignedInSession,
  what: { section: Section; title: string; notice: Html; yes: string; actionPath: string; backPath: string },
): FastifyReply {
  const ui = uiFor(reply.request);
  return sendPage(reply, 200, {
    title: what.title,
    signedIn: { section: what.section, csrfToken: s.csrfToken, walletId: s.walletId },
    body: html`<p class="notice" role="alert">${what.notice}</p>
<form method="post" action="${what.actionPath}">${csrfField(s.csrfToken)}<input type="hidden" name="confirm" value="yes">
<p><button type="submit">${what.yes}</button> <a href="${what.backPath}">${ui.t('close.no')}</a></p>
</form>`,
  });
}

export function sendCloseConfirmation(
  reply: FastifyReply,
  s: SignedInSession,
  what: { section: Section; kindText: string; label: string; consequence: string; closePath: string; backPath: string },
): FastifyReply {
  const ui = uiFor(reply.request);
  return sendConfirmation(reply, s, {
    section: what.section,
    title: ui.t('close.title', { label: what.label }),
    notice: ui.th('close.notice', { kind: what.kindText, label: what.label, consequence: what.consequence }),
    yes: ui.t('close.yes', { label: what.label }),
    actionPath: what.closePath,
    backPath: what.backPath,
  });
}
