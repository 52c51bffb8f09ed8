// Vendor A native message → chat.completion.
//   id: the vendor's message id (never invented); model: the id the client sent; created: the call's instant.
//   message.content: text blocks joined, or null when there is none; tool_use → tool_calls (arguments as
//   JSON text); thinking and redacted_thinking → thinking_blocks (with signatures, so the client can send
//   them back on the next turn) and the thinking text as reasoning_content.
//   finish_reason: see util/finish-reason.ts. usage: prompt_tokens = input + cache read + cache write,
//   prompt_tokens_details.cached_tokens = cache read.
import type { AnswerTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonObject, JsonValue } from '../../../engine/core/types.ts';
import type { ChatAnswerMessage, ChatCompletion, ChatToolCall, ChatUsage, ThinkingBlock } from '../../util/chat-bodies.ts';
import { finishReasonFromStop } from '../../util/finish-reason.ts';
import { isObject, num } from '../../util/json.ts';

export function chatUsageFromNative(u: JsonValue | undefined): ChatUsage {
  const usage = isObject(u) ? u : {};
  const cacheRead = num(usage.cache_read_input_tokens);
  const cacheWrite = num(usage.cache_creation_input_tokens);
  const prompt = num(usage.input_tokens) + cacheRead + cacheWrite;
  const completion = num(usage.output_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead },
  };
}

export const clientModel = (client: JsonObject, fallback: string): string => (typeof client.model === 'string' ? client.model : fallback);

const run: AnswerTransform = (answer, call): ChatCompletion => {
  const blocks = Array.isArray(answer.content) ? answer.content : [];
  const texts: string[] = [];
  const toolCalls: ChatToolCall[] = [];
  const thinking: ThinkingBlock[] = [];
  const reasoning: string[] = [];
  for (const b of blocks) {
    if (!isObject(b)) continue;
    if (b.type === 'text' && typeof b.text === 'string') texts.push(b.text);
    else if (b.type === 'tool_use') {
      toolCalls.push({
        id: String(b.id ?? ''),
        type: 'function',
        function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) },
      });
    } else if (b.type === 'thinking') {
      thinking.push({
        type: 'thinking',
        thinking: typeof b.thinking === 'string' ? b.thinking : '',
        signature: typeof b.signature === 'string' ? b.signature : '',
      });
      if (typeof b.thinking === 'string' && b.thinking !== '') reasoning.push(b.thinking);
    } else if (b.type === 'redacted_thinking') {
      thinking.push({ type: 'redacted_thinking', data: typeof b.data === 'string' ? b.data : '' });
    }
  }
  const message: ChatAnswerMessage = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning.length > 0) message.reasoning_content = reasoning.join('\n');
  if (thinking.length > 0) message.thinking_blocks = thinking;
  return {
    id: typeof answer.id === 'string' ? answer.id : '',
    object: 'chat.completion',
    created: Math.floor(call.settings.now.getTime() / 1000),
    model: clientModel(call.client, call.model.id),
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonFromStop(answer.stop_reason) }],
    usage: chatUsageFromNative(answer.usage),
  };
};

/** The step as chains name it. */
export const messagesToChat: Step<AnswerTransform> = { name: 'messages-to-chat', run };
