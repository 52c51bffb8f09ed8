// The most a simulated vendor may bill for a request body: every way it can bill beyond the visible text taken to
// its end. Output up to the limit sent (or the model's most), every answer asked for, every server-tool call the
// body leaves it (the vendor's own caps: max_uses per tool on /v1/messages, max_tool_calls on /v1/responses),
// each search's result pages and each file search's chunks fed back as input, each advisor use reading the whole
// transcript and writing its own output, and a prompt the vendor may write to its cache (vendor A bills the
// write above the input price, at a breakpoint the body marks). Several candidates when the vendor chooses how to spend one cap (searches or file
// searches). The hold property test (test/calls/hold-covers-largest-usage.property.test.ts) checks that the
// gateway holds at least the cost of each.
import { chatTurn } from './chat.ts';
import { isObj } from './common.ts';
import { responsesTurn } from './responses.ts';
import { cachesForAnHour, compactionAsked, messagesTurn } from './vendor-a.ts';

/** What the simulated vendors put into the prompt for one search: result pages of a few thousand tokens each. */
const SEARCH_PAGE_TOKENS = 20_000;
/** The largest chunk a vector store may be cut into, and how many a file search returns unless told. */
const FILE_CHUNK_TOKENS = 4096;
const FILE_RESULTS_DEFAULT = 20;
/** Vendor A's server-side loop pauses the turn (pause_turn) after this many iterations: its bound where no field caps calls. */
const VENDOR_A_LOOP_ITERATIONS = 10;

/** A remote MCP server (responses `mcp` tools, the native `mcp_servers` list or `mcp_toolset` tools): results as large as the server makes them. */
const sendsMcp = (body: Obj, tools: Obj[]) =>
  (Array.isArray(body.mcp_servers) && body.mcp_servers.length > 0) || tools.some((t) => String(t.type).startsWith('mcp'));

/** What the vendor knows of its own model. */
interface VendorModel {
  max_output?: number | null;
  context_window?: number | null;
}

interface BilledUsage {
  input_tokens: number;
  output_tokens: number;
  cache_write_tokens: number;
  /** The part of cache_write_tokens written to be kept an hour (a breakpoint with `ttl: '1h'`). */
  cache_write_1h_tokens: number;
  web_search_calls: number;
  file_search_calls: number;
  advisor: { model: string; input_tokens: number; output_tokens: number }[];
}

type Obj = Record<string, unknown>;

const count = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);

/** The largest bills of the vendor behind `path` for `body`; Infinity in a count: the body leaves it unbounded. */
export function largestUsage(path: string, body: Obj, modelOf: (id: string) => VendorModel | undefined): BilledUsage[] {
  const model = modelOf(String(body.model)) ?? {};
  const tools = (Array.isArray(body.tools) ? body.tools : []).filter(isObj);
  const outputCap = (limit: number | undefined) => Math.min(limit ?? Infinity, model.max_output ?? Infinity);
  const window = (tokens: number) => Math.min(tokens, model.context_window ?? Infinity);
  if (path === '/v1/messages') {
    const turn = messagesTurn(body);
    const output = outputCap(turn.maxTokens);
    const searches = tools.filter((t) => String(t.type).startsWith('web_search')).reduce((n, t) => n + (count(t.max_uses) ?? Infinity), 0);
    // An MCP server's tool list enters the first pass too, as large as its server makes it.
    const mcp = sendsMcp(body, tools);
    const input = window(turn.inputTokens + searches * SEARCH_PAGE_TOKENS + (mcp ? Infinity : 0));
    const advisorTools = tools.filter((t) => String(t.type).startsWith('advisor'));
    const advisorOut = (t: Obj) => Math.min(count(t.max_tokens) ?? Infinity, modelOf(String(t.model))?.max_output ?? Infinity);
    const advisor = advisorTools.flatMap((t) => {
      const uses = count(t.max_uses) ?? Infinity;
      return [{ model: String(t.model), input_tokens: uses * (input + output), output_tokens: uses * advisorOut(t) }];
    });
    // Each tool call is followed by another pass over the prompt, its results so far and the output so far.
    const steps: Step[] = [
      { calls: searches, tokens: SEARCH_PAGE_TOKENS },
      ...advisorTools.map((t) => ({ calls: count(t.max_uses) ?? Infinity, tokens: advisorOut(t) })),
      ...tools
        .filter((t) => String(t.type).startsWith('web_fetch'))
        .map((t) => ({ calls: count(t.max_uses) ?? Infinity, tokens: model.context_window ?? Infinity })),
      // MCP calls and tool searches run until the loop pauses; a search loads the body's deferred tools again.
      ...(mcp ? [{ calls: VENDOR_A_LOOP_ITERATIONS, tokens: model.context_window ?? Infinity }] : []),
      ...(tools.some((t) => String(t.type).startsWith('tool_search'))
        ? [{ calls: VENDOR_A_LOOP_ITERATIONS, tokens: turn.inputTokens }]
        : []),
    ];
    const loop = loopPasses(turn.inputTokens, output, steps, window);
    // A compaction edit may summarise the prompt before every pass, at the model's own prices.
    const compacts = compactionAsked(body);
    const passInput = input + loop.input;
    const compaction = compacts
      ? { input: passInput, output: (loop.passes + 1) * (model.max_output ?? Infinity) }
      : { input: 0, output: 0 };
    // Vendor A writes its cache only at a breakpoint the body marks: then the whole prompt may be written, at the
    // cache-write price.
    const cached = JSON.stringify(body).includes('"cache_control":{');
    const allInput = passInput + compaction.input;
    return [
      {
        input_tokens: cached ? 0 : allInput,
        cache_write_tokens: cached ? allInput : 0,
        cache_write_1h_tokens: cached && cachesForAnHour(body) ? allInput : 0,
        output_tokens: output + compaction.output,
        web_search_calls: searches,
        file_search_calls: 0,
        advisor,
      },
    ];
  }
  if (path === '/v1/chat/completions') {
    const turn = chatTurn(body);
    const answers = count(body.n) ?? 1;
    const limit = count(body.max_completion_tokens) ?? count(body.max_tokens);
    return [{ ...none(), input_tokens: window(turn.inputTokens), output_tokens: answers * outputCap(limit) }];
  }
  if (path === '/v1/responses') return responsesUsage(body, tools, outputCap, window, model.context_window ?? Infinity);
  return [];
}

function responsesUsage(
  body: Obj,
  tools: Obj[],
  outputCap: (n?: number) => number,
  window: (n: number) => number,
  contextWindow: number,
): BilledUsage[] {
  const turn = responsesTurn(body);
  const output = outputCap(turn.maxTokens);
  const web = tools.filter((t) => String(t.type).startsWith('web_search'));
  const files = tools.filter((t) => t.type === 'file_search');
  const mcp = sendsMcp(body, tools);
  if (web.length === 0 && files.length === 0 && !mcp) return [{ ...none(), input_tokens: window(turn.inputTokens), output_tokens: output }];
  // One cap for the call's built-in tools: the vendor may spend every call on either kind.
  const calls = turn.serverToolCap ?? Infinity;
  const chunks = Math.max(...files.map((t) => count(t.max_num_results) ?? FILE_RESULTS_DEFAULT), 0);
  const out: BilledUsage[] = [];
  // Every call spent on one kind, each followed by another pass over the prompt, the results and the output so far.
  // An MCP server's tool list may fill the first pass's prompt, whatever the calls are spent on.
  const passesOf = (step: number) =>
    window(turn.inputTokens + calls * step + (mcp ? Infinity : 0)) +
    loopPasses(turn.inputTokens, output, [{ calls, tokens: step }], window).input;
  if (web.length > 0) {
    out.push({ ...none(), input_tokens: passesOf(SEARCH_PAGE_TOKENS), output_tokens: output, web_search_calls: calls });
  }
  if (files.length > 0) {
    out.push({ ...none(), input_tokens: passesOf(chunks * FILE_CHUNK_TOKENS), output_tokens: output, file_search_calls: calls });
  }
  // MCP calls count under the same cap (the vendor's built-in tools'): each result may fill the window.
  if (mcp) out.push({ ...none(), input_tokens: passesOf(contextWindow), output_tokens: output });
  return out;
}

const none = (): BilledUsage => ({
  input_tokens: 0,
  output_tokens: 0,
  cache_write_tokens: 0,
  cache_write_1h_tokens: 0,
  web_search_calls: 0,
  file_search_calls: 0,
  advisor: [],
});

interface Step {
  calls: number;
  tokens: number;
}

/**
 * The passes after the first of a server-side loop, the largest steps first: pass j reads the prompt, the results
 * of the j calls before it and the output so far, at most the window. Infinity when a step's calls are unbounded.
 */
function loopPasses(prompt: number, output: number, steps: Step[], window: (n: number) => number): { input: number; passes: number } {
  let input = 0;
  let passes = 0;
  let read = prompt + output;
  for (const step of [...steps].filter((s) => s.calls > 0).sort((a, b) => b.tokens - a.tokens)) {
    if (!Number.isFinite(step.calls)) return { input: Infinity, passes: Infinity };
    for (let j = 0; j < step.calls; j++) {
      read += step.tokens;
      input += window(read);
    }
    passes += step.calls;
  }
  return { input, passes };
}
