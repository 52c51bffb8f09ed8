// The chat-completions format (/v1/chat/completions) of vendors B to E.
import type { Protocol } from '../../engine/core/protocol.ts';
import { chatErrors, eventObject } from './vendor-errors.ts';

export const chatCompletions: Protocol = {
  errors: chatErrors,
  // Servers report a failed stream as a data event holding `error` (no `choices`); some also name the event.
  isStreamError: (event) => {
    if (event.event === 'error') return true;
    const data = event.data.startsWith('{"error"') ? eventObject(event) : undefined;
    return data !== undefined && isErrorObject(data.error) && !('choices' in data);
  },
  limits: { output: ['max_completion_tokens', 'max_tokens'], choices: 'n' },
  modelFields: [{ field: 'model' }],
  streamNeeds: {
    request: ['ask-stream-usage'],
    why: 'the vendor reports usage in a stream only when the request asks for it',
  },
};

const isErrorObject = (v: unknown) => typeof v === 'object' && v !== null;
