// Shared pieces of the vendor simulator: control tags, token counting, the answer plan, error shapes.
//
// USAGE RULES (deterministic; gateway tests compute expected numbers from these):
//
//   input tokens  = T(C) + 85 × I + 3000 × P, T = a real tokenizer's count (simulator/tokens.ts: o200k_base)
//                   C = all request text: system / instructions, every message's text
//                       (string contents, text parts, tool_result / tool message / function_call_output
//                       contents, tool-call arguments JSON, thinking text), plus JSON.stringify(tools)
//                       when tools are given, plus `input` (responses, embeddings, images prompt).
//                   I = image blocks (vendor A `image` and non-text `document`, chat `image_url`,
//                       responses `input_image`, image-edit files).
//                   P = pages of inline PDFs (vendor A base64 `document` of application/pdf, responses
//                       `input_file` file_data, chat `file` file_data): each `/Type /Page` object; over 100 is a 400.
//   output tokens = T(G), G = everything generated: answer text, thinking text, and tool-call arguments
//                   JSON. Truncation by max tokens keeps about four characters per token allowed.
//
//   `[[sim:usage input=N output=N cache_read=N cache_write=N reasoning=N]]` (any subset) in the last user
//   text overrides these numbers. `input` is always the UNCACHED input bucket, so the four numbers equal the
//   gateway's normalised buckets (uncached input, cache read, cache write, output) whichever vendor reports
//   them. The wire reports differ, as the real vendors do:
//     - vendor A (/v1/messages): usage.input_tokens = input (EXCLUDES cache), cache_read_input_tokens =
//       cache_read, cache_creation_input_tokens = cache_write, output_tokens = output.
//     - vendor B chat (/v1/chat/completions): prompt_tokens = input + cache_read (INCLUDES cached),
//       prompt_tokens_details.cached_tokens = cache_read; cache_write is not reported (vendor B has none).
//       completion_tokens = output (reasoning tokens included), completion_tokens_details.reasoning_tokens.
//     - vendor B responses (/v1/responses): input_tokens = input + cache_read, input_tokens_details.
//       cached_tokens = cache_read, output_tokens = output, output_tokens_details.reasoning_tokens.
//   `reasoning=N` without `output=` adds N to the computed output tokens (reasoning is part of output).
//   An `output=` override is reported as given, even above max_tokens.

import { countTokens } from './tokens.ts';

export type ErrorFlavor = 'a' | 'b';

export interface Tags {
  usage: { input?: number; output?: number; cache_read?: number; cache_write?: number; reasoning?: number };
  tool: boolean;
  tools: number;
  stop?: string;
  thinking: boolean;
  webSearch: number;
  long: number;
  flag: boolean;
  cost?: number | undefined;
  inputModerated?: { cost: number };
  outputModerated: boolean;
  fail: boolean;
  never: boolean;
  undeliverable: boolean;
}

const TAG_RE = /\[\[sim:([^\]]*)\]\]/g;

/** Most tool calls or web searches a tag may ask for: a prompt may not make the simulator loop without end. */
const MAX_TAG_COUNT = 100;

export function parseTags(text: string): Tags {
  const tags: Tags = {
    usage: {},
    tool: false,
    tools: 0,
    thinking: false,
    webSearch: 0,
    long: 0,
    flag: false,
    outputModerated: false,
    fail: false,
    never: false,
    undeliverable: false,
  };
  for (const m of text.matchAll(TAG_RE)) {
    const parts = m[1]!.trim().split(/\s+/).filter(Boolean);
    if (parts.length === 0) continue;
    const [head, ...rest] = parts;
    const kv = (s: string): [string, string | undefined] => {
      const i = s.indexOf('=');
      return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + 1)];
    };
    const [name, value] = kv(head!);
    const opts: Record<string, string> = {};
    for (const p of rest) {
      const [k, v] = kv(p);
      if (v !== undefined) opts[k] = v;
    }
    const num = (v: string | undefined) => (v === undefined || !Number.isFinite(Number(v)) ? undefined : Number(v));
    switch (name) {
      case 'usage':
        for (const [k, v] of Object.entries(opts)) {
          const n = num(v);
          if (n !== undefined && ['input', 'output', 'cache_read', 'cache_write', 'reasoning'].includes(k)) {
            (tags.usage as Record<string, number>)[k] = Math.max(0, Math.floor(n));
          }
        }
        break;
      case 'tool':
        tags.tool = true;
        tags.tools = Math.max(tags.tools, 1);
        break;
      case 'tools':
        tags.tool = true;
        tags.tools = Math.min(MAX_TAG_COUNT, Math.max(1, Math.floor(num(value) ?? 1)));
        break;
      case 'stop':
        if (value) tags.stop = value;
        break;
      case 'thinking':
        tags.thinking = true;
        break;
      case 'web_search':
        tags.webSearch = Math.min(MAX_TAG_COUNT, Math.max(0, Math.floor(num(value) ?? 1)));
        break;
      case 'long':
        tags.long = Math.max(0, Math.floor(num(value) ?? 100));
        break;
      case 'flag':
        tags.flag = true;
        break;
      case 'cost':
        tags.cost = num(value);
        break;
      case 'input_moderated':
        tags.inputModerated = { cost: num(opts.cost) ?? 0 };
        break;
      case 'output_moderated':
        tags.outputModerated = true;
        break;
      case 'fail':
        tags.fail = true;
        break;
      case 'never':
        tags.never = true;
        break;
      case 'undeliverable':
        tags.undeliverable = true;
        break;
      default:
        break;
    }
  }
  return tags;
}

function stripTags(text: string): string {
  return text.replace(TAG_RE, '').replace(/\s+/g, ' ').trim();
}

/** Accumulates request text and image blocks. */
/** What one PDF page bills at most (its text and its image), and the most pages a request may carry. */
const PDF_PAGE_TOKENS = 3000;
const PDF_MAX_PAGES = 100;

export class Counter {
  private readonly pieces: string[] = [];
  images = 0;
  text(s: unknown): void {
    if (typeof s === 'string') this.pieces.push(s);
  }
  json(v: unknown): void {
    if (v !== undefined) this.pieces.push(JSON.stringify(v));
  }
  image(): void {
    this.images += 1;
  }
  pageTokens = 0;
  /**
   * An inline PDF (base64, bare or as a data URI), billed per page as the vendors bill it: each page's text and
   * an image of the page, PDF_PAGE_TOKENS at most. More than PDF_MAX_PAGES pages is refused, as the vendors do.
   */
  pdf(data: unknown): void {
    if (typeof data !== 'string') return;
    const raw = Buffer.from(data.replace(/^data:[^,]*,/, ''), 'base64').toString('latin1');
    const pages = Math.max(1, (raw.match(/\/Type\s*\/Page(?![A-Za-z])/g) ?? []).length);
    if (pages > PDF_MAX_PAGES)
      throw new VendorError(400, `A maximum of ${PDF_MAX_PAGES} PDF pages may be provided; this one has ${pages}.`);
    this.pageTokens += pages * PDF_PAGE_TOKENS;
  }
  /** The text's tokens alone. */
  textTokens(): number {
    return countTokens(this.pieces.join('\n'));
  }
  tokens(): number {
    return this.textTokens() + 85 * this.images + this.pageTokens;
  }
}

export { countTokens };

/** A tool the answer may call, in a vendor-neutral form. */
export interface ToolSpec {
  name: string;
  schema: unknown;
}

/** What a conversation's last turn asks of the simulator, independent of wire format. */
export interface Turn {
  model: string;
  /** Text of the last user-authored message (tags included). */
  userText: string;
  /** The last message is a tool result; its text. */
  toolResult?: string | undefined;
  tools: ToolSpec[];
  /** 'auto' | 'none' | 'required' | a tool name. */
  toolChoice: string;
  /** max output tokens asked for, if any. */
  maxTokens?: number | undefined;
  /** Most server-tool calls the request allows (max_uses, max_tool_calls); absent: as many as the tags ask. */
  serverToolCap?: number;
  inputTokens: number;
}

interface ToolCallPlan {
  id: string;
  name: string;
  arguments: string;
}

export interface Plan {
  tags: Tags;
  thinking?: { text: string; signature: string };
  text: string;
  toolCalls: ToolCallPlan[];
  /** Neutral stop: end | max_tokens | tool | refusal | stop_sequence | pause_turn */
  stop: 'end' | 'max_tokens' | 'tool' | 'refusal' | 'stop_sequence' | 'pause_turn';
  usage: { input: number; output: number; cache_read: number; cache_write: number; reasoning: number };
  webSearches: number;
}

function argumentsFor(schema: unknown): string {
  const s = (schema ?? {}) as { required?: unknown; properties?: Record<string, { type?: unknown }> };
  const required = Array.isArray(s.required) ? (s.required as unknown[]).filter((x) => typeof x === 'string') : [];
  if (required.length === 0) return JSON.stringify({ q: 'sim' });
  const out: Record<string, unknown> = {};
  for (const name of required as string[]) {
    const t = s.properties?.[name]?.type;
    const type = Array.isArray(t) ? t[0] : t;
    out[name] =
      type === 'number' || type === 'integer' ? 1 : type === 'boolean' ? true : type === 'array' ? [] : type === 'object' ? {} : 'sim';
  }
  return JSON.stringify(out);
}

/** Decides the answer: text or tool calls, stop reason, usage. `nextId(prefix)` makes tool-call ids. */
export function plan(turn: Turn, nextId: (prefix: string) => string, toolIdPrefix: string): Plan {
  const tags = parseTags(turn.userText);
  const p: Plan = {
    tags,
    text: '',
    toolCalls: [],
    stop: 'end',
    usage: { input: 0, output: 0, cache_read: 0, cache_write: 0, reasoning: 0 },
    webSearches: Math.min(tags.webSearch, turn.serverToolCap ?? Infinity),
  };
  const model = turn.model;
  const wantsTool =
    turn.toolResult === undefined && turn.tools.length > 0 && turn.toolChoice !== 'none' && (tags.tool || turn.toolChoice !== 'auto');
  if (wantsTool) {
    const forced = turn.toolChoice !== 'auto' && turn.toolChoice !== 'required' ? turn.toolChoice : undefined;
    const first = turn.tools.find((t) => t.name === forced) ?? turn.tools[0]!; // wantsTool: there are tools
    const count = Math.max(1, tags.tools);
    for (let i = 0; i < count; i++) {
      const tool = forced ? first : (turn.tools[i] ?? first);
      p.toolCalls.push({ id: nextId(toolIdPrefix), name: tool.name, arguments: argumentsFor(tool.schema) });
    }
    p.stop = 'tool';
  } else if (turn.toolResult !== undefined) {
    p.text = `Simulated reply from ${model}: tool result: ${stripTags(turn.toolResult).slice(0, 40)}`;
  } else {
    p.text = `Simulated reply from ${model}: ${stripTags(turn.userText).slice(0, 40)}`;
  }
  if (tags.long > 0 && p.toolCalls.length === 0) {
    const words: string[] = [];
    for (let i = 1; i <= tags.long; i++) words.push(`word${i}`);
    p.text += ` ${words.join(' ')}`;
  }
  if (tags.thinking) {
    const thought = `Simulated thinking about: ${stripTags(turn.userText).slice(0, 40)}`;
    p.thinking = { text: thought, signature: Buffer.from(`sim-signature:${thought}`).toString('base64') };
  }
  // Truncation by max tokens: thinking first, then text; tool calls are dropped when they do not fit.
  let generated = countTokens((p.thinking?.text ?? '') + p.text + p.toolCalls.map((c) => c.arguments).join(''));
  if (turn.maxTokens !== undefined && generated > turn.maxTokens) {
    let budget = Math.max(0, turn.maxTokens) * 4;
    if (p.thinking) {
      if (p.thinking.text.length > budget) p.thinking.text = p.thinking.text.slice(0, budget);
      budget -= p.thinking.text.length;
    }
    if (p.toolCalls.length > 0) {
      p.toolCalls = [];
      p.text = '';
    }
    p.text = p.text.slice(0, budget);
    p.stop = 'max_tokens';
    generated = Math.max(0, turn.maxTokens); // a vendor that stops at the limit bills the limit
  }
  if (p.stop !== 'max_tokens' && tags.stop) {
    const s = tags.stop;
    if (s === 'max_tokens' || s === 'refusal' || s === 'stop_sequence' || s === 'pause_turn' || s === 'end') p.stop = s;
    else if (s === 'end_turn') p.stop = 'end';
  }
  const reasoning = tags.usage.reasoning ?? 0;
  p.usage = {
    input: tags.usage.input ?? turn.inputTokens,
    output: tags.usage.output ?? generated + reasoning,
    cache_read: tags.usage.cache_read ?? 0,
    cache_write: tags.usage.cache_write ?? 0,
    reasoning,
  };
  return p;
}

/** Splits text into stream deltas: one word (with its following whitespace) per delta. */
export function deltas(text: string): string[] {
  if (text === '') return [];
  const out = text.match(/\s*\S+\s*/g) ?? [text];
  return out;
}

// ---------- error shapes ----------

const A_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const B_TYPES: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'not_found' },
  413: { type: 'invalid_request_error', code: 'request_too_large' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  500: { type: 'server_error', code: null },
  503: { type: 'server_error', code: 'service_unavailable' },
};

export function defaultMessage(status: number): string {
  switch (status) {
    case 429:
      return 'Rate limit reached (simulated).';
    case 529:
      return 'Overloaded';
    case 500:
      return 'The server had an error while processing your request (simulated).';
    case 503:
      return 'The service is temporarily unavailable (simulated).';
    default:
      return `Simulated error ${status}.`;
  }
}

export function errorBody(flavor: ErrorFlavor, status: number, message: string, param: string | null = null): unknown {
  if (flavor === 'a') {
    const type = A_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    return { type: 'error', error: { type, message } };
  }
  const t = B_TYPES[status] ?? (status >= 500 ? { type: 'server_error', code: null } : { type: 'invalid_request_error', code: null });
  return { error: { message, type: t.type, param, code: t.code } };
}

/** A request the handler rejects with a vendor error. */
export class VendorError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

export const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
