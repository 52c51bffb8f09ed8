// Chat door → vendor A: system and developer messages move to the separate `system` field.
// One plain string system message stays a string; otherwise the text parts become text blocks, in order,
// each keeping its own cache_control (cache_control on the message object itself is not carried).
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonObject, JsonValue } from '../../../engine/core/types.ts';
import { withCacheControl } from '../../util/cache-control.ts';
import { bad, describe, has, isObject } from '../../util/json.ts';
import { messagesOf } from './messages-array.ts';
import type { TextBlock } from './request-bodies.ts';

const SYSTEM_ROLES = new Set(['system', 'developer']);

function systemBlocks(content: JsonValue | undefined, i: number): TextBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content))
    throw bad(
      `messages[${i}].content of a system message must be a string or an array of text parts; got ${describe(content)}.`,
      'messages',
    );
  const blocks: TextBlock[] = [];
  content.forEach((part, j) => {
    if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string') {
      throw bad(`messages[${i}].content[${j}] of a system message must be a text part {type:'text', text}.`, 'messages');
    }
    if (part.text !== '' || part.cache_control) blocks.push(withCacheControl({ type: 'text', text: part.text }, part));
  });
  return blocks;
}

const run: RequestTransform = (call) => {
  const messages = messagesOf(call.body);
  if (has(call.body, 'system')) {
    throw bad(
      "A top-level 'system' field is not a chat-completions parameter. Send a message with role 'system', or use /v1/messages for the native format.",
      'system',
    );
  }
  const rest: JsonObject[] = [];
  const system: TextBlock[][] = [];
  const plainStrings: string[] = [];
  messages.forEach((m, i) => {
    if (!SYSTEM_ROLES.has(m.role as string)) return void rest.push(m);
    system.push(systemBlocks(m.content, i));
    if (typeof m.content === 'string') plainStrings.push(m.content);
  });
  if (system.length === 0) return call;
  const blocks = system.flat();
  call.body.messages = rest;
  if (system.length === 1 && plainStrings.length === 1) {
    const [only] = plainStrings as [string];
    if (only !== '') call.body.system = only;
  } else if (blocks.length > 0) {
    call.body.system = blocks;
  }
  return call;
};

/** The step as chains name it. */
export const systemToField: Step<RequestTransform> = { name: 'system-to-field', run };
