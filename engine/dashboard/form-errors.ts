// A refused form says what was wrong in the words of the form, not of the API: the key checks
// (keys/validate.ts) are shared with the JSON doors and name fields as `monthly_limit_credits`, and say
// "null" where the form says "blank". This turns one into the other for the dashboard only.
import type { GatewayError } from '../core/errors.ts';

const FIELD_WORDS: [RegExp, string][] = [
  [/\bmonthly_limit_credits\b/g, 'the monthly limit'],
  [/\bdaily_limit_credits\b/g, 'the daily limit'],
  [/\bexpires_on\b/g, 'the last day'],
  [/\bname_prefix\b/g, 'the name'],
  [/\bname\b(?= must| may)/g, 'the name'],
  [/\bmodels\[\d+\]/g, 'one entry'],
  [/\bmodels\b(?= must)/g, 'the models'],
  [/\baudience\b(?= must|')/g, 'the audience'],
  [/\bcount\b(?= must)/g, 'how many'],
];

const NULL_WORDS: [RegExp, string][] = [
  [/, or null for no limit/g, ', or blank for no limit'],
  [/, or null for no expiry/g, ', or blank for never'],
  [/, or null for every model/g, ', or blank for every model'],
  [/ To close a key now, use DELETE \/v1\/keys\/\{id\}\./g, ' To stop a key now, close it.'],
  [/ a list of up to/g, ' up to'],
];

export function inWords(e: GatewayError): string {
  let text = e.message;
  for (const [re, words] of [...FIELD_WORDS, ...NULL_WORDS]) text = text.replace(re, words);
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Which field of the form the error is about, for putting the message beside it. */
export const fieldOf = (e: GatewayError): string | undefined => (e.param === 'name_prefix' ? 'name' : e.param);
