// The chat-completions bodies the gateway writes to a chat client when its vendor speaks another format (a whole
// answer, a stream's chunks, a stream's error): typed, so a translator that leaves out or misspells a field the
// client's SDK reads fails to compile. What vendors send is read field by field instead: it is untrusted.

export type ChatUsage = {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
};

export type ChatToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

/** A tool call as a stream sends it: whole in its first delta, then pieces of its arguments under the same index. */
type ChatToolCallDelta = ({ index: number } & ChatToolCall) | { index: number; function: { arguments: string } };

/** A reasoning block the client sends back on its next turn, with its signature (the vendor refuses it otherwise). */
export type ThinkingBlock = { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };

export type ChatAnswerMessage = {
  role: 'assistant';
  content: string | null;
  tool_calls?: ChatToolCall[];
  reasoning_content?: string;
  thinking_blocks?: ThinkingBlock[];
};

/** What every chat body the gateway writes opens with: the vendor's answer id, and the model as the client named it. */
type Answered<O extends string> = { id: string; object: O; created: number; model: string };

export type ChatCompletion = Answered<'chat.completion'> & {
  choices: { index: number; message: ChatAnswerMessage; logprobs: null; finish_reason: string | null }[];
  usage: ChatUsage;
};

export type ChatDelta = {
  role?: 'assistant';
  content?: string;
  reasoning_content?: string;
  tool_calls?: ChatToolCallDelta[];
  thinking_blocks?: ThinkingBlock[];
};

/** One chunk of a stream; the last one a client asked usage for has no choices and carries it. */
export type ChatChunk = Answered<'chat.completion.chunk'> & {
  choices: { index: number; delta: ChatDelta; logprobs: null; finish_reason: string | null }[];
  usage?: ChatUsage;
};

/** A failure in the middle of a stream, in the error shape chat clients read. */
export type ChatStreamError = { error: { type: string; message: string; code: string; param: null } };
