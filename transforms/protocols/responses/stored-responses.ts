// What vendor B stores of a responses answer and replays when a later body names it: the response by
// `previous_response_id`, its output items by `item_reference`, and conversations by `conversation`. The
// engine records whose each stored answer is (engine/usage/vendor-responses.ts); this file only reads the ids.
import type { SseEvent } from '../../../engine/core/call.ts';
import type { StoredAnswer, StoredAnswers, StoredName } from '../../../engine/core/protocol.ts';
import { isObject } from '../../util/json.ts';

/** The stream events carrying the whole response object (its id from the first, its items from the last). */
const RESPONSE_EVENTS = new Set([
  'response.created',
  'response.in_progress',
  'response.completed',
  'response.incomplete',
  'response.failed',
]);

/** Any value a vendor might read as an id, as text: a name that is not a string is never recorded, so it is refused too. */
const idText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

const present = (v: unknown): boolean => v !== undefined && v !== null;

function answerOf(v: unknown): StoredAnswer | null {
  if (!isObject(v)) return null;
  const response = isObject(v.response) ? v.response : v.object === 'response' ? v : null;
  if (!response || typeof response.id !== 'string' || response.id === '') return null;
  const output = Array.isArray(response.output) ? response.output : [];
  const items = output.flatMap((item) => (isObject(item) && typeof item.id === 'string' && item.id !== '' ? [item.id] : []));
  return { id: response.id, items };
}

/**
 * An input item the vendor may fill in from its store: `item_reference`, whose `type` the format lets a client leave
 * out (an item with only an id is a reference too), and a `reasoning` item, which the vendor reads by its id from
 * what it stored when the item does not carry its encrypted content. A client passing back its own answer's items
 * names ids its wallet stored.
 */
const isReference = (item: Record<string, unknown>): boolean =>
  present(item.id) && (item.type === undefined || item.type === null || item.type === 'item_reference' || item.type === 'reasoning');

function namedIn(body: Record<string, unknown>): StoredName[] {
  const names: StoredName[] = [];
  if (present(body.previous_response_id))
    names.push({ field: 'previous_response_id', id: idText(body.previous_response_id), kind: 'answer' });
  const conversation = body.conversation;
  if (isObject(conversation)) names.push({ field: 'conversation.id', id: idText(conversation.id), kind: 'conversation' });
  else if (present(conversation)) names.push({ field: 'conversation', id: idText(conversation), kind: 'conversation' });
  if (Array.isArray(body.input)) {
    body.input.forEach((item, i) => {
      if (isObject(item) && isReference(item)) names.push({ field: `input[${i}].id`, id: idText(item.id), kind: 'answer' });
    });
  }
  return names;
}

export const storedResponses: StoredAnswers = {
  answerOf,
  mayName: (event: SseEvent) => (event.event ? RESPONSE_EVENTS.has(event.event) : event.data.includes('"response"')),
  namedIn,
};
