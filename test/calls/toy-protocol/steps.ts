// The toy format's translation steps (index.ts runs them from the chat door): a chat body as turns of parts, the
// answer's candidates as a chat completion, and the usage it reports.
import type { AnswerTransform, RequestTransform, UsageReader } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { emptyUsage, type JsonObject } from '../../../engine/core/types.ts';
import type { ChatCompletion } from '../../../transforms/util/chat-bodies.ts';

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A chat-completions body as this format asks: turns of parts, the output limit under its own name. */
const toContents: RequestTransform = (call) => {
  const messages = Array.isArray(call.body.messages) ? call.body.messages.filter(isObject) : [];
  const body: JsonObject = {
    model: call.body.model ?? null,
    contents: messages.map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: String(m.content ?? '') }] })),
  };
  const limit = call.body.max_completion_tokens ?? call.body.max_tokens;
  if (limit !== undefined) body.max_output_token_count = limit;
  return { ...call, body };
};

const toChat: AnswerTransform = (answer, call): ChatCompletion => {
  const candidate = Array.isArray(answer.candidates) && isObject(answer.candidates[0]) ? answer.candidates[0] : {};
  const parts = isObject(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts.filter(isObject) : [];
  const usage = isObject(answer.usage_metadata) ? answer.usage_metadata : {};
  const prompt = Number(usage.prompt_token_count ?? 0);
  const completion = Number(usage.candidates_token_count ?? 0);
  return {
    id: 'chatcmpl-toy',
    object: 'chat.completion',
    created: 0,
    model: call.model.id,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: parts.map((p) => String(p.text ?? '')).join('') },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      prompt_tokens_details: { cached_tokens: 0 },
    },
  };
};

const readUsage: UsageReader = (answer) => {
  const usage = isObject(answer.usage_metadata) ? answer.usage_metadata : {};
  const read = (v: unknown) => (typeof v === 'number' && v >= 0 ? v : Number.NaN);
  return { ...emptyUsage(), input_tokens: read(usage.prompt_token_count), output_tokens: read(usage.candidates_token_count) };
};

export const chatToGenerateContent: Step<RequestTransform> = { name: 'chat-to-generate-content', run: toContents };
export const generateContentToChat: Step<AnswerTransform> = { name: 'generate-content-to-chat', run: toChat };
export const generateContentUsage: Step<UsageReader> = { name: 'generate-content-usage', run: readUsage };
