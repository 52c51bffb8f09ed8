// Vendor A native SSE events → chat.completion.chunk frames, each event translated the moment it arrives
// (push returns that event's frames; nothing waits for the end, so time to first token is the vendor's).
//   message_start        → first chunk: delta {role:'assistant', content:''}; id = the vendor's message id.
//   text                 → delta.content.
//   tool_use             → delta.tool_calls with per-call state (keyed by index, so several calls
//                          in one answer never mix): the first delta of a call carries
//                          index, id, type and name with empty arguments; input_json_delta pieces follow as
//                          argument deltas under the same index. Several calls get indexes 0, 1, ….
//   thinking             → delta.reasoning_content as it streams (the convention of vendor-A-compatible
//                          gateways), and when the block closes one delta.thinking_blocks with the whole
//                          block and its signature, so the client can send it back (the vendor refuses a later tool turn without it).
//   redacted_thinking    → delta.thinking_blocks [{type:'redacted_thinking', data}].
//   message_delta        → a chunk with empty delta and the mapped finish_reason.
//   message_stop         → the usage chunk (choices: []) only when the client sent stream_options.include_usage.
//   error                → one error frame in the chat shape ({error:{type,message,code}}), then the stream ends
//                          (no [DONE], so no client mistakes it for a complete answer).
//   end()                → data: [DONE].
import type { Call, SseEvent, StreamTranslatorFactory } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonObject, JsonValue } from '../../../engine/core/types.ts';
import type { ChatChunk, ChatDelta, ChatStreamError } from '../../util/chat-bodies.ts';
import { finishReasonFromStop } from '../../util/finish-reason.ts';
import { isObject, tryParse } from '../../util/json.ts';
import { DONE_FRAME, dataFrame } from '../../util/sse.ts';
import { chatUsageFromNative, clientModel } from './messages-to-chat.ts';
import { NativeUsageTracker } from './native-usage-tracker.ts';

const KEPT_ERROR_TYPES = new Set(['invalid_request_error']);

interface ThinkingState {
  thinking: string;
  signature: string;
}

/** The blocks open in one answer: each tool call's chat index, and each thinking block's text so far. */
interface OpenBlocks {
  nextTool: number;
  toolIndex: Map<number, number>;
  thinking: Map<number, ThinkingState>;
}

function errorFrame(err: JsonValue | undefined): string {
  const e = isObject(err) ? err : {};
  const vendorType = typeof e.type === 'string' ? e.type : '';
  const type = KEPT_ERROR_TYPES.has(vendorType) ? vendorType : 'upstream_error';
  const message = typeof e.message === 'string' && e.message !== '' ? e.message : 'The vendor reported an error during the stream.';
  const frame: ChatStreamError = { error: { type, message, code: type, param: null } };
  return dataFrame(frame);
}

/** The chunk delta a content_block_start sends, if any; a tool call or a thinking block is opened in `open`. */
function deltaOnBlockStart(index: number, block: JsonObject, open: OpenBlocks): ChatDelta | null {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' && block.text !== '' ? { content: block.text } : null;
    case 'tool_use': {
      const n = open.nextTool++;
      open.toolIndex.set(index, n);
      const input = isObject(block.input) && Object.keys(block.input).length > 0 ? JSON.stringify(block.input) : '';
      return {
        tool_calls: [
          { index: n, id: String(block.id ?? ''), type: 'function', function: { name: String(block.name ?? ''), arguments: input } },
        ],
      };
    }
    case 'thinking': {
      const text = typeof block.thinking === 'string' ? block.thinking : '';
      open.thinking.set(index, { thinking: text, signature: typeof block.signature === 'string' ? block.signature : '' });
      return text !== '' ? { reasoning_content: text } : null;
    }
    case 'redacted_thinking':
      return { thinking_blocks: [{ type: 'redacted_thinking', data: typeof block.data === 'string' ? block.data : '' }] };
  }
  return null;
}

/** The chunk delta a content_block_delta sends, if any; a thinking block's text and signature grow in `open`. */
function deltaOnBlockDelta(index: number, delta: JsonObject, open: OpenBlocks): ChatDelta | null {
  switch (delta.type) {
    case 'text_delta':
      return typeof delta.text === 'string' && delta.text !== '' ? { content: delta.text } : null;
    case 'input_json_delta': {
      const n = open.toolIndex.get(index);
      return n !== undefined && typeof delta.partial_json === 'string' && delta.partial_json !== ''
        ? { tool_calls: [{ index: n, function: { arguments: delta.partial_json } }] }
        : null;
    }
    case 'thinking_delta': {
      if (typeof delta.thinking !== 'string' || delta.thinking === '') return null;
      const state = open.thinking.get(index);
      if (state) state.thinking += delta.thinking;
      return { reasoning_content: delta.thinking };
    }
    case 'signature_delta': {
      const state = open.thinking.get(index);
      if (state && typeof delta.signature === 'string') state.signature += delta.signature;
      return null;
    }
  }
  return null;
}

/** A thinking block closing sends it whole with its signature, so the client can send it back. */
function deltaOnBlockStop(index: number, open: OpenBlocks): ChatDelta | null {
  const state = open.thinking.get(index);
  if (!state) return null;
  open.thinking.delete(index);
  return { thinking_blocks: [{ type: 'thinking', thinking: state.thinking, signature: state.signature }] };
}

const run: StreamTranslatorFactory = (call: Call) => {
  const tracker = new NativeUsageTracker(call);
  const includeUsage = isObject(call.client.stream_options) && call.client.stream_options.include_usage === true;
  const model = clientModel(call.client, call.model.id);
  const created = Math.floor(call.settings.now.getTime() / 1000);
  let id = '';
  let started = false;
  let ended = false;
  let usageSent = false;
  const open: OpenBlocks = { nextTool: 0, toolIndex: new Map(), thinking: new Map() };

  const frame = (choices: ChatChunk['choices'], usage?: ChatChunk['usage']): string => {
    const c: ChatChunk = { id, object: 'chat.completion.chunk', created, model, choices, ...(usage ? { usage } : {}) };
    return dataFrame(c);
  };
  const chunk = (delta: ChatDelta, finish: string | null = null) => frame([{ index: 0, delta, logprobs: null, finish_reason: finish }]);

  const start = (out: string[]) => {
    if (started) return;
    started = true;
    out.push(chunk({ role: 'assistant', content: '' }));
  };

  const send = (out: string[], delta: ChatDelta | null) => {
    if (delta) out.push(chunk(delta));
  };

  return {
    push(event: SseEvent): string[] {
      if (ended) return [];
      const data = tryParse(event.data);
      if (!isObject(data)) return [];
      const type = typeof data.type === 'string' ? data.type : event.event;
      const ev: JsonObject = { ...data, type: type ?? '' };
      tracker.see(ev);
      const out: string[] = [];
      switch (type) {
        case 'message_start':
          if (isObject(ev.message) && typeof ev.message.id === 'string') id = ev.message.id;
          start(out);
          break;
        case 'content_block_start':
          start(out);
          if (isObject(ev.content_block)) send(out, deltaOnBlockStart(Number(ev.index), ev.content_block, open));
          break;
        case 'content_block_delta':
          start(out);
          if (isObject(ev.delta)) send(out, deltaOnBlockDelta(Number(ev.index), ev.delta, open));
          break;
        case 'content_block_stop':
          send(out, deltaOnBlockStop(Number(ev.index), open));
          break;
        case 'message_delta':
          start(out);
          if (isObject(ev.delta) && ev.delta.stop_reason !== undefined && ev.delta.stop_reason !== null) {
            out.push(chunk({}, finishReasonFromStop(ev.delta.stop_reason)));
          }
          break;
        case 'message_stop':
          if (includeUsage && !usageSent) {
            usageSent = true;
            out.push(frame([], chatUsageFromNative(tracker.raw())));
          }
          break;
        case 'error':
          ended = true;
          out.push(errorFrame(ev.error));
          break;
      }
      return out;
    },
    end(): string[] {
      if (ended) return [];
      ended = true;
      return [DONE_FRAME];
    },
    // The client's end marker is end()'s [DONE], which the relay always holds for the charge.
    answerEnded: () => false,
    usage: () => tracker.usage(),
  };
};

/** The step as chains name it. */
export const messageEventsToChatChunks: Step<StreamTranslatorFactory> = { name: 'message-events-to-chat-chunks', run };
