// The pieces of a native messages request the chat door's translation writes for vendor A (turns of blocks, the
// system field, tools, the tool choice, output_config): typed, so a translator that misspells a field the vendor
// reads fails to compile. What the client sent is read field by field instead: it is untrusted.
import type { JsonObject, JsonValue } from '../../../engine/core/types.ts';

/** A client's breakpoint, carried as sent: carry-cache-control brings it to the native shape or refuses it. */
type Breakpoint = { cache_control?: JsonValue };

export type TextBlock = { type: 'text'; text: string } & Breakpoint;

export type ImageBlock = {
  type: 'image';
  source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
} & Breakpoint;

export type DocumentBlock = {
  type: 'document';
  source: { type: 'base64'; media_type: 'application/pdf'; data: string } | { type: 'text'; media_type: 'text/plain'; data: string };
} & Breakpoint;

/** What a chat content part becomes. */
export type ContentBlock = TextBlock | ImageBlock | DocumentBlock;

/** A reasoning block sent back on a later turn; one without its signature is sent as the client gave it. */
export type NativeThinkingBlock = { type: 'thinking'; thinking: string; signature?: string } | { type: 'redacted_thinking'; data: string };

export type ToolUseBlock = { type: 'tool_use'; id: string; name: string; input: JsonObject } & Breakpoint;

export type ToolResultBlock = { type: 'tool_result'; tool_use_id: string; content?: string | ContentBlock[] } & Breakpoint;

export type TurnBlock = ContentBlock | NativeThinkingBlock | ToolUseBlock | ToolResultBlock;

export type Turn = { role: 'user' | 'assistant'; content: TurnBlock[] };

export type NativeTool = { name: string; input_schema: JsonObject; description?: string; strict?: boolean } & Breakpoint;

export type NativeToolChoice = ({ type: 'none' | 'auto' | 'any' } | { type: 'tool'; name: string }) & {
  disable_parallel_tool_use?: boolean;
};

/** The native settings two chat fields become: reasoning_effort and a json_schema response_format. */
export type OutputConfig = { effort?: string; format?: { type: 'json_schema'; schema: JsonObject } };
