// The chat-completions format (/v1/chat/completions) of vendors B to E, reached from the chat door as it is: the
// client's body relayed with the model's rules applied, the usage asked for in a stream and the output capped.
import type { Protocol } from '../../../engine/core/protocol.ts';
import { isJsonObject } from '../../../engine/core/types.ts';
import { answerHasList } from '../../steps/answer-has-list.ts';
import { capOutput } from '../../steps/cap-output.ts';
import { modelRules } from '../../steps/model-rules.ts';
import { chatErrors, eventObject } from '../../util/vendor-errors.ts';
import { askStreamUsage } from './ask-stream-usage.ts';
import { chatUsage } from './chat-usage.ts';
import { relayHidingInjectedUsage } from './relay-hiding-injected-usage.ts';
import { chatTranscript } from './transcript.ts';

/** A chunk's delta with nothing in it but its role. */
const saysNothing = (delta: Record<string, unknown>) => Object.entries(delta).every(([k, v]) => k === 'role' || v === null || v === '');

export const chatCompletions: Protocol = {
  errors: chatErrors,
  // Servers report a failed stream as a data event holding `error` (no `choices`); some also name the event.
  isStreamError: (event) => {
    if (event.event === 'error') return true;
    const data = event.data.startsWith('{"error"') ? eventObject(event) : undefined;
    return data !== undefined && isErrorObject(data.error) && !('choices' in data);
  },
  // A chunk whose choices say nothing yet but their role (and which reports no usage): the stream's first.
  isStreamOpening: (event) => {
    const data = eventObject(event);
    if (!data || !Array.isArray(data.choices) || (data.usage !== undefined && data.usage !== null)) return false;
    return data.choices.every((c) => isJsonObject(c) && c.finish_reason == null && isJsonObject(c.delta) && saysNothing(c.delta));
  },
  limits: { output: ['max_completion_tokens', 'max_tokens'], choices: 'n' },
  // `image_url` parts of a message's content (a user's, or a tool's result).
  images: { types: ['image_url'], lists: ['messages'], item_parts: ['content'] },
  // The messages (a system prompt is one of them); a message's content and a part's text are read. A file part by
  // id, or inline (billed per page), pulls in more than its bytes.
  prompt: {
    turns: ['messages'],
    text_keys: ['content', 'text'],
    pulls: {
      part: (p) => p.type === 'file' && isJsonObject(p.file) && [p.file.file_id, p.file.file_data].some((v) => typeof v === 'string'),
    },
  },
  // Function and custom tools, which the client defines and runs.
  tools: { list: 'tools', body_defined: ['function', 'custom'] },
  transcript: chatTranscript,
  modelFields: [{ field: 'model' }],
  streamNeeds: {
    request: ['ask-stream-usage'],
    why: 'the vendor reports usage in a stream only when the request asks for it',
  },
  chains: {
    chat: {
      upstream: '/v1/chat/completions',
      request: [modelRules, askStreamUsage, capOutput],
      check: answerHasList({
        name: 'choices-present',
        field: 'choices',
        least: 1,
        entryHas: 'message',
        lacking: 'the vendor answered without choices, or a choice without its message',
      }),
      stream: relayHidingInjectedUsage,
      usage: chatUsage,
    },
  },
};

const isErrorObject = (v: unknown) => typeof v === 'object' && v !== null;
