// The two error bodies the served formats' vendors write and their clients read, read and written the same way by
// every format that uses them.

import type { SseEvent } from '../../engine/core/call.ts';
import { type ErrorBody, gatewayErrorBody } from '../../engine/core/errors.ts';
import type { VendorErrors } from '../../engine/core/protocol.ts';
import { isObject, tryParse } from './json.ts';

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** `{error: {type, message}}` as a field of the body or of an event, whichever shape holds it. */
function errorField(body: unknown): { type?: string | undefined; message?: string | undefined } {
  const error = isObject(body) ? body.error : undefined;
  if (!isObject(error)) return {};
  return { type: text(error.type), message: text(error.message) };
}

/**
 * The chat-completions family (`{error: {message, type, param, code}}`): chat completions, responses, images,
 * embeddings, speech, moderations and video jobs. Types the contract does not name are the vendor's own
 * trouble, not the client's request.
 */
export const chatErrors: VendorErrors = {
  body: gatewayErrorBody,
  read: errorField,
  types: {
    server_error: 'upstream_error',
    insufficient_quota: 'upstream_error',
    rate_limit_exceeded: 'upstream_error',
    requests: 'upstream_error',
    tokens: 'upstream_error',
  },
};

/** The messages format's body as its clients read it: `{type: 'error', error: {type, message}}`. */
const messagesErrorBody: ErrorBody = {
  name: 'MessagesError',
  write: (err) => ({ type: 'error', error: { type: err.type, message: err.message, ...err.extra } }),
  streamEvent: 'error',
  schema: {
    type: 'object',
    required: ['type', 'error'],
    properties: {
      type: { const: 'error' },
      error: { type: 'object', required: ['type', 'message'], properties: { type: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

/** The messages format (`{type: 'error', error: {type, message}}`). */
export const messagesErrors: VendorErrors = {
  body: messagesErrorBody,
  read: errorField,
  types: {
    overloaded_error: 'upstream_error',
    rate_limit_error: 'upstream_error',
    timeout_error: 'upstream_error',
    billing_error: 'upstream_error',
  },
};

/** An SSE event's data as a JSON object, or undefined. Read only while no output has passed, so its cost is bounded. */
export function eventObject(event: SseEvent): Record<string, unknown> | undefined {
  if (!event.data.startsWith('{')) return undefined;
  const parsed = tryParse(event.data);
  return isObject(parsed) ? parsed : undefined;
}
