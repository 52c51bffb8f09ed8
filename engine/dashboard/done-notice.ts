// A form's change answers 303 to its page with `?done=<outcome>`, so a refresh repeats nothing; the page then
// says once, above everything, what was done.
import type { FastifyRequest } from 'fastify';
import { type Html, html } from './html.ts';
import type { MessageKey, Ui } from './i18n.ts';

/** The outcome the address names, in the page's words; nothing for one the page does not know. */
export function doneNotice(req: FastifyRequest, ui: Ui, outcomes: Readonly<Record<string, MessageKey>>): Html | '' {
  const done = String((req.query as Record<string, unknown>).done ?? '');
  const key = Object.hasOwn(outcomes, done) ? outcomes[done] : undefined;
  return key ? html`<p class="ok" role="status">${ui.t(key)}</p>` : '';
}
