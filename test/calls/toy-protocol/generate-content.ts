// A toy wire format, declared the way a real one is in transforms/protocols/ but from a test folder: a
// "generate-content" API whose bodies hold `contents` of `parts`, whose answers hold `candidates` and
// `usage_metadata`, and whose errors say a gRPC-style `status`. Registering it adds entries to the registries
// config/doors.yaml names; nothing in engine/ knows it.
import type { AnswerTransform, RequestTransform, UsageReader } from '../../../engine/core/call.ts';
import type { Protocol } from '../../../engine/core/protocol.ts';
import { emptyUsage, type JsonObject } from '../../../engine/core/types.ts';
import { answerTransforms, protocols, requestTransforms, usageReaders } from '../../../transforms/index.ts';

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export const generateContent: Protocol = {
  errors: {
    shape: 'generate-content',
    read: (body) => {
      const error = isObject(body) && isObject(body.error) ? body.error : {};
      return {
        type: typeof error.status === 'string' ? error.status : undefined,
        message: typeof error.message === 'string' ? error.message : undefined,
      };
    },
    // NOT_FOUND names a model here, which the contract calls model_not_found (a 404 would otherwise be not_found_error).
    types: { NOT_FOUND: 'model_not_found', INVALID_ARGUMENT: 'invalid_request_error' },
  },
  limits: { output: ['max_output_token_count'] },
  modelFields: [{ field: 'model' }],
};

/** A chat-completions body as this format asks: turns of parts, the output limit under its own name. */
const chatToGenerateContent: RequestTransform = (call) => {
  const messages = Array.isArray(call.body.messages) ? call.body.messages.filter(isObject) : [];
  const body: JsonObject = {
    model: call.body.model ?? null,
    contents: messages.map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: String(m.content ?? '') }] })),
  };
  const limit = call.body.max_completion_tokens ?? call.body.max_tokens;
  if (limit !== undefined) body.max_output_token_count = limit;
  return { ...call, body };
};

const generateContentToChat: AnswerTransform = (answer, call) => {
  const candidate = Array.isArray(answer.candidates) && isObject(answer.candidates[0]) ? answer.candidates[0] : {};
  const parts = isObject(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts.filter(isObject) : [];
  const usage = isObject(answer.usage_metadata) ? answer.usage_metadata : {};
  return {
    id: 'chatcmpl-toy',
    object: 'chat.completion',
    created: 0,
    model: call.model.id,
    choices: [
      { index: 0, message: { role: 'assistant', content: parts.map((p) => String(p.text ?? '')).join('') }, finish_reason: 'stop' },
    ],
    usage: {
      prompt_tokens: Number(usage.prompt_token_count ?? 0),
      completion_tokens: Number(usage.candidates_token_count ?? 0),
      total_tokens: Number(usage.prompt_token_count ?? 0) + Number(usage.candidates_token_count ?? 0),
    },
  };
};

const generateContentUsage: UsageReader = (answer) => {
  const usage = isObject(answer.usage_metadata) ? answer.usage_metadata : {};
  const read = (v: unknown) => (typeof v === 'number' && v >= 0 ? v : Number.NaN);
  return { ...emptyUsage(), input_tokens: read(usage.prompt_token_count), output_tokens: read(usage.candidates_token_count) };
};

/** Adds the toy format and its steps to the registries (this test file's own module instances). */
export function registerGenerateContent(): void {
  protocols['generate-content'] = generateContent;
  requestTransforms['chat-to-generate-content'] = chatToGenerateContent;
  answerTransforms['generate-content-to-chat'] = generateContentToChat;
  usageReaders['generate-content-usage'] = generateContentUsage;
}

/** The doors.yaml edit an operator makes: the chat door reaches vendor D through the toy format. */
export const CHAT_DOOR_TO_TOY = {
  from: "  vendor_protocol: { a: messages, '*': chat-completions }\n  protocols:\n",
  to:
    "  vendor_protocol: { a: messages, d: generate-content, '*': chat-completions }\n  protocols:\n" +
    '    generate-content:\n' +
    '      upstream: /v1beta/generate\n' +
    '      request: [model-rules, chat-to-generate-content]\n' +
    '      answer: generate-content-to-chat\n' +
    '      usage: generate-content-usage\n',
};
