// Shared guard: `messages` must be an array of objects with a string role (400 otherwise).
import type { JsonObject } from '../../../engine/core/types.ts';
import { bad, describe, isObject } from '../../util/json.ts';

export function messagesOf(body: JsonObject): JsonObject[] {
  const messages = body.messages;
  if (!Array.isArray(messages)) throw bad(`messages must be an array of {role, content} objects; got ${describe(messages)}.`, 'messages');
  messages.forEach((m, i) => {
    if (!isObject(m)) throw bad(`messages[${i}] must be an object with role and content; got ${describe(m)}.`, 'messages');
    if (typeof m.role !== 'string') throw bad(`messages[${i}].role must be a string.`, 'messages');
  });
  return messages as JsonObject[];
}
