// A refused form comes back on its own page, filled in as typed, with the reason in the form's words beside it
// (docs/operating.md), rather than on an error page that loses what was typed: one way for every form.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { fromThrown } from '../http/reply-error.ts';
import { type FormBody, formOf } from './form.ts';
import { inWords } from './form-errors.ts';
import { html } from './html.ts';
import { uiFor } from './i18n.ts';

/** A refused form as typed, with the reason: `target` names which form of the page it was. */
export interface FormState {
  target: string;
  values: FormBody;
  message: string;
}

/** The value a field shows: what was typed when this form was refused, else the saved one. */
export const shownValue = (state: FormState | undefined, target: string, field: string, saved: string) =>
  state && state.target === target ? (state.values[field] ?? '') : saved;

/** The reason, where the refused form shows it (nothing for the page's other forms). */
export const refusal = (state: FormState | undefined, target: string, id: string) =>
  state && state.target === target ? html`<p class="error" role="alert" id="${id}">${state.message}</p>` : '';

/** Runs a form's change; a 400 answers `page` (status 400) with the form as typed and the reason in words. */
export async function orRefusedForm(
  req: FastifyRequest,
  target: string,
  change: () => Promise<FastifyReply>,
  page: (state: FormState) => Promise<FastifyReply>,
): Promise<FastifyReply> {
  try {
    return await change();
  } catch (err) {
    const e = fromThrown(err);
    if (e.status !== 400) throw err;
    return page({ target, values: formOf(req.body), message: inWords(e, uiFor(req)) });
  }
}
