// Chat door → vendor A: user, assistant and tool messages become native turns of content blocks.
//
// - user content: text parts, image_url (data: URI → base64 source, http(s) → url source), file (PDF/text).
// - assistant: `thinking_blocks` first (thinking with its signature — also signature-only ones with empty
//   text — and redacted_thinking with its data: the vendor answers 400 to a tool turn that lost them), then text, then `tool_calls` as tool_use blocks
//   whose arguments are parsed JSON. `reasoning_content` without thinking_blocks cannot be replayed (the vendor
//   needs the signature) and is not sent.
// - tool messages: tool_result blocks in a user turn; cache_control on the tool message goes on its
//   tool_result block (the tool message *is* the tool result); parts keep their own.
// - consecutive turns of the same role are merged (tool results followed by a user message share one turn,
//   results first). cache_control on any other message object is not carried: the native format has no
//   breakpoint on a whole message.
// Runs after system-to-field; a system message left here is an ordering error reported as 400.
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonObject, JsonValue } from '../../../engine/core/types.ts';
import { bad, describe, isObject, tryParse } from '../../util/json.ts';
import { contentToBlocks } from './content-parts.ts';
import { messagesOf } from './messages-array.ts';
import type { NativeThinkingBlock, ToolResultBlock, ToolUseBlock, Turn, TurnBlock } from './request-bodies.ts';

function thinkingBlocks(value: JsonValue | undefined, where: string): NativeThinkingBlock[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw bad(`${where}.thinking_blocks must be an array.`, 'messages');
  return value.map((b, k) => {
    const at = `${where}.thinking_blocks[${k}]`;
    if (!isObject(b)) throw bad(`${at} must be an object.`, 'messages');
    if (b.type === 'redacted_thinking') {
      if (typeof b.data !== 'string') throw bad(`${at}.data must be a string.`, 'messages');
      return { type: 'redacted_thinking', data: b.data };
    }
    if (b.type === 'thinking' || b.type === undefined) {
      const block: NativeThinkingBlock = { type: 'thinking', thinking: typeof b.thinking === 'string' ? b.thinking : '' };
      if (b.signature !== undefined && b.signature !== null) {
        if (typeof b.signature !== 'string') throw bad(`${at}.signature must be a string.`, 'messages');
        block.signature = b.signature;
      }
      return block;
    }
    throw bad(`${at} has type ${describe(b.type)}; expected 'thinking' or 'redacted_thinking'.`, 'messages');
  });
}

function toolUseBlocks(value: JsonValue | undefined, where: string): ToolUseBlock[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw bad(`${where}.tool_calls must be an array.`, 'messages');
  return value.map((tc, k) => {
    const at = `${where}.tool_calls[${k}]`;
    if (!isObject(tc) || !isObject(tc.function)) throw bad(`${at} must be {id, type:'function', function:{name, arguments}}.`, 'messages');
    if (tc.type !== undefined && tc.type !== 'function') {
      throw bad(`${at} has type ${describe(tc.type)}; only function tool calls are carried to vendor A models.`, 'messages');
    }
    if (typeof tc.id !== 'string' || tc.id === '') throw bad(`${at}.id must be a non-empty string.`, 'messages');
    const fn = tc.function;
    if (typeof fn.name !== 'string' || fn.name === '') throw bad(`${at}.function.name must be a non-empty string.`, 'messages');
    const args = fn.arguments ?? '';
    let input: JsonValue | undefined;
    if (typeof args === 'string') input = args.trim() === '' ? {} : tryParse(args);
    else input = args;
    if (!isObject(input)) throw bad(`${at}.function.arguments must be a JSON object encoded as a string.`, 'messages');
    const block: ToolUseBlock = { type: 'tool_use', id: tc.id, name: fn.name, input };
    if (tc.cache_control !== undefined && tc.cache_control !== null) block.cache_control = tc.cache_control;
    return block;
  });
}

function toolResult(m: JsonObject, where: string): ToolResultBlock {
  if (typeof m.tool_call_id !== 'string' || m.tool_call_id === '')
    throw bad(`${where}.tool_call_id must be a non-empty string.`, 'messages');
  const block: ToolResultBlock = { type: 'tool_result', tool_use_id: m.tool_call_id };
  if (typeof m.content === 'string') block.content = m.content;
  else {
    const parts = contentToBlocks(m.content, 'tool', where);
    if (parts.length > 0) block.content = parts;
  }
  if (m.cache_control !== undefined && m.cache_control !== null) block.cache_control = m.cache_control;
  return block;
}

const run: RequestTransform = (call) => {
  const messages = messagesOf(call.body);
  const turns: Turn[] = [];
  const push = (role: Turn['role'], blocks: TurnBlock[]) => {
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  messages.forEach((m, i) => {
    const where = `messages[${i}]`;
    switch (m.role) {
      case 'user': {
        const blocks = contentToBlocks(m.content, 'user', where);
        if (blocks.length === 0) throw bad(`${where} (user) has no content.`, 'messages');
        push('user', blocks);
        break;
      }
      case 'assistant': {
        const blocks = [
          ...thinkingBlocks(m.thinking_blocks, where),
          ...contentToBlocks(m.content, 'assistant', where),
          ...toolUseBlocks(m.tool_calls, where),
        ];
        if (m.function_call !== undefined && m.function_call !== null) {
          throw bad(`${where}.function_call is the deprecated form; send tool_calls instead.`, 'messages');
        }
        if (blocks.length === 0) throw bad(`${where} (assistant) has neither content nor tool_calls.`, 'messages');
        push('assistant', blocks);
        break;
      }
      case 'tool':
        push('user', [toolResult(m, where)]);
        break;
      default:
        throw bad(
          `${where}.role ${describe(m.role)} is not accepted for vendor A models; use user, assistant, tool, system or developer.`,
          'messages',
        );
    }
  });
  call.body.messages = turns;
  return call;
};

/** The step as chains name it. */
export const messagesToBlocks: Step<RequestTransform> = { name: 'messages-to-blocks', run };
