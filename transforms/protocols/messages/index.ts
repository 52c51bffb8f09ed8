// Vendor A's native messages format (/v1/messages), reached from the messages door as it is and from the chat
// door through the translation chain below.
import type { Protocol } from '../../../engine/core/protocol.ts';
import { isJsonObject } from '../../../engine/core/types.ts';
import { answerHasList } from '../../steps/answer-has-list.ts';
import { capServerTools } from '../../steps/cap-server-tools.ts';
import { modelRules } from '../../steps/model-rules.ts';
import { eventObject, messagesErrors } from '../../util/vendor-errors.ts';
import { carryCacheControl } from './carry-cache-control.ts';
import { chatParamsToNative } from './chat-params-to-native.ts';
import { defaultMaxTokens } from './default-max-tokens.ts';
import { effortToNative } from './effort-to-native.ts';
import { messageEventsToChatChunks } from './message-events-to-chat-chunks.ts';
import { messagesToBlocks } from './messages-to-blocks.ts';
import { messagesToChat } from './messages-to-chat.ts';
import { messagesUsage } from './messages-usage.ts';
import { relayMessages } from './relay-messages.ts';
import { stopToSequences } from './stop-to-sequences.ts';
import { systemToField } from './system-to-field.ts';
import { toolChoiceToNative } from './tool-choice-to-native.ts';
import { toolsToNative } from './tools-to-native.ts';
import { messagesTranscript } from './transcript.ts';

/** A message answers with a `content` list (empty when the model had nothing to say). */
const contentPresent = answerHasList({
  name: 'content-present',
  field: 'content',
  least: 0,
  lacking: 'the vendor answered without content',
});

const EMPTY_BLOCKS = new Set(['text', 'thinking', 'tool_use']);

export const messages: Protocol = {
  errors: messagesErrors,
  // `event: error` carries `{type: 'error', error: {…}}`; a relay that drops the event name still shows the type.
  isStreamError: (event) => event.event === 'error' || eventObject(event)?.type === 'error',
  // A message's start, pings, and the start of a block that is empty until its deltas (text, thinking, a tool's call).
  isStreamOpening: (event) => {
    const data = eventObject(event);
    if (data?.type === 'message_start' || data?.type === 'ping') return true;
    const block = data?.type === 'content_block_start' ? data.content_block : undefined;
    return typeof block === 'object' && block !== null && EMPTY_BLOCKS.has(String((block as { type?: unknown }).type));
  },
  limits: {
    output: ['max_tokens'],
    tool_uses: 'max_uses',
    // `context_management.edits: [{type: 'compact_…'}]` summarises the transcript in passes of its own.
    compaction: { field: 'context_management', list: 'edits', type_prefix: 'compact' },
  },
  // Image and document blocks in each message's content, and in a tool result's own content. A document of text
  // or of content blocks is read as text; one of a PDF or an image is billed by its pages or as an image.
  images: {
    types: ['image'],
    document: {
      type: 'document',
      source: 'source',
      text_sources: ['text', 'content'],
      inline: { type: 'base64', media_type: 'media_type' },
    },
    lists: ['messages'],
    item_parts: ['content'],
    nested: 'content',
  },
  // The transcript, and the system prompt beside it; a block's text and a message's or tool result's content are read.
  prompt: {
    turns: ['messages'],
    system_prompt: ['system'],
    text_keys: ['content', 'text'],
    // A block's `cache_control` is a breakpoint the vendor writes the cache up to; `ttl: '1h'` keeps it an hour.
    cache_mark: { key: 'cache_control', hour: { field: 'ttl', value: '1h' } },
    pulls: {
      // A document by URL or file id, or inline in a form billed per page (a PDF: each page's text and an image of
      // it; a few kilobytes can hold a hundred pages), not one of plain text; and every version of the fetch tool,
      // which reads pages the body does not show.
      part: (p) => {
        const source = isJsonObject(p.source) ? p.source : undefined;
        if (p.type === 'document')
          return source?.type === 'url' || source?.type === 'file' || (source?.type === 'base64' && source.media_type !== 'text/plain');
        return typeof p.type === 'string' && p.type.startsWith('web_fetch');
      },
      // Remote MCP servers, whose results their owner sizes.
      body: (b) => Array.isArray(b.mcp_servers) && b.mcp_servers.length > 0,
    },
  },
  // A tool without a type, or typed `custom`, is the client's; every versioned server tool is the vendor's to run.
  tools: {
    list: 'tools',
    body_defined: ['custom'],
    runs: {
      web_search: ['web_search*'],
      advisor: ['advisor*'],
      fetch: ['web_fetch*'],
      remote_mcp: ['mcp*'],
      tool_search: ['tool_search*'],
    },
    servers: ['mcp_servers'],
  },
  // The advisor tool runs the model it names over the whole transcript.
  transcript: messagesTranscript,
  modelFields: [{ field: 'model' }, { in: 'tools', field: 'model' }],
  needs: {
    request: ['cap-server-tools'],
    why: 'the vendor runs server tools as often as it decides unless the body caps them',
  },
  chains: {
    // A chat-completions body translated step by step; the answer and its stream translated back.
    chat: {
      upstream: '/v1/messages',
      request: [
        systemToField,
        messagesToBlocks,
        toolsToNative,
        capServerTools,
        toolChoiceToNative,
        stopToSequences,
        defaultMaxTokens,
        effortToNative,
        modelRules,
        carryCacheControl,
        chatParamsToNative,
      ],
      check: contentPresent,
      answer: messagesToChat,
      stream: messageEventsToChatChunks,
      usage: messagesUsage,
    },
    // A client of this door speaks the format itself and chooses its version and betas; a chat client does not.
    messages: {
      upstream: '/v1/messages',
      forwardsClientHeaders: true,
      request: [modelRules, capServerTools],
      check: contentPresent,
      stream: relayMessages,
      usage: messagesUsage,
    },
  },
};
