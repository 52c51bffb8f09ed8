// Vendor B's responses format (/v1/responses).
import { given } from '../../../engine/core/prompt-fields.ts';
import type { Protocol } from '../../../engine/core/protocol.ts';
import { isJsonObject } from '../../../engine/core/types.ts';
import { answerHasList } from '../../steps/answer-has-list.ts';
import { capServerTools } from '../../steps/cap-server-tools.ts';
import { modelRules } from '../../steps/model-rules.ts';
import { chatErrors, eventObject } from '../../util/vendor-errors.ts';
import { relayResponses } from './relay-responses.ts';
import { responsesUsage } from './responses-usage.ts';
import { storedResponses } from './stored-responses.ts';
import { responsesTranscript } from './transcript.ts';

const FAILURES = new Set(['error', 'response.failed']);
// A response's creation, and an item or a part added before any of its text or arguments.
const OPENINGS = new Set(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);

export const responses: Protocol = {
  errors: chatErrors,
  isStreamError: (event) => FAILURES.has(event.event ?? '') || FAILURES.has(String(eventObject(event)?.type ?? '')),
  isStreamOpening: (event) => OPENINGS.has(String(eventObject(event)?.type ?? '')),
  limits: { output: ['max_output_tokens'], tool_calls: 'max_tool_calls', tool_results: 'max_num_results' },
  // `input_image` parts of an input item's content, or of a function call's output given as parts.
  images: { types: ['input_image'], lists: ['input'], item_parts: ['content', 'output'] },
  // The input (a string, or items) and the instructions beside it; a part's text, an item's content and a function
  // call's output are read.
  prompt: {
    turns: ['input'],
    system_prompt: ['instructions'],
    text_keys: ['content', 'text', 'output'],
    pulls: {
      // A file by URL or id, or inline (billed per page); a remote MCP server's tool, whose results its owner
      // sizes; an item the vendor stored, replayed whole.
      part: (p) =>
        (p.type === 'input_file' && [p.file_url, p.file_id, p.file_data].some((v) => typeof v === 'string')) ||
        p.type === 'mcp' ||
        p.type === 'item_reference',
      // A stored answer, conversation or prompt the vendor replays into the prompt.
      body: (b) => given(b.previous_response_id) || given(b.conversation) || (isJsonObject(b.prompt) && given(b.prompt.id)),
    },
  },
  // Functions and custom tools are the client's; hosted search, file search and remote MCP tools the vendor runs.
  tools: {
    list: 'tools',
    body_defined: ['function', 'custom'],
    runs: { web_search: ['web_search*'], file_search: ['file_search'], remote_mcp: ['mcp*'], tool_search: ['tool_search*'] },
  },
  // Hosted tools may run a model of their own (image_generation's `model`).
  transcript: responsesTranscript,
  modelFields: [{ field: 'model' }, { in: 'tools', field: 'model' }],
  needs: {
    request: ['cap-server-tools'],
    why: 'the vendor runs server tools as often as it decides unless the body caps them',
  },
  // Answers are stored by default (`store`), and a later body may name them: each is held to its wallet.
  stored: storedResponses,
  chains: {
    responses: {
      upstream: '/v1/responses',
      request: [modelRules, capServerTools],
      // A response answers with an `output` list (empty while a background one is queued).
      check: answerHasList({
        name: 'output-present',
        field: 'output',
        least: 0,
        failed: { field: 'status', value: 'failed' },
        lacking: 'the vendor answered without output',
      }),
      stream: relayResponses,
      usage: responsesUsage,
    },
  },
};
