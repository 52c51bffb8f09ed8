// A toy wire format, declared the way a real one is in transforms/protocols/<format>/ but from a test folder: a
// "generate-content" API whose bodies hold `contents` of `parts`, whose answers hold `candidates` and
// `usage_metadata`, and whose errors say a gRPC-style `status`. The folder is the whole format (its facts, the chain
// the chat door runs to it, its error body for a door whose clients read it, and how it reads as a conversation on
// a call's span); one line of config/doors.yaml names it for a vendor. Nothing in engine/ or transforms/ knows it.
import { errorFieldSchema } from '../../../engine/core/errors.ts';
import type { Protocol } from '../../../engine/core/protocol.ts';
import { modelRules } from '../../../transforms/steps/model-rules.ts';
import { chatToGenerateContent, generateContentToChat, generateContentUsage, isObject } from './steps.ts';
import { generateContentTranscript } from './transcript.ts';

export const generateContent: Protocol = {
  errors: {
    // As its clients read an error: the HTTP status as `code`, the contract's type as `status`.
    body: {
      name: 'GenerateContentError',
      write: (err) => ({ error: { code: err.status, message: err.message, status: err.type } }),
      schema: errorFieldSchema({ code: { type: 'integer' }, message: { type: 'string' }, status: { type: 'string' } }, [
        'code',
        'message',
        'status',
      ]),
    },
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
  transcript: generateContentTranscript,
  chains: {
    chat: {
      upstream: '/v1beta/generate',
      request: [modelRules, chatToGenerateContent],
      answer: generateContentToChat,
      usage: generateContentUsage,
    },
  },
};

/** The one line of config/doors.yaml an operator edits: the chat door reaches vendor D through the toy format. */
export const CHAT_DOOR_TO_TOY = {
  from: "  vendor_protocol: { a: messages, '*': chat-completions }\n",
  to: "  vendor_protocol: { a: messages, d: generate-content, '*': chat-completions }\n",
};

/** One more line, for a door whose clients read the format's errors: the chat door answers in its error body. */
export const CHAT_DOOR_ERRORS_TOY = { from: '  errors: chat-completions\n', to: '  errors: generate-content\n' };
