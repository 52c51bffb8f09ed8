// The bounds of a server-side tool loop: every pass the vendor samples is billed for the whole prompt so far, and
// a compaction may add a summarising pass before each, so the hold must price every pass the body allows.

import type { HonouredLimits } from '../core/protocol.ts';
import type { ToolReading } from '../core/tool-fields.ts';
import type { JsonObject, JsonValue } from '../core/types.ts';

/** What one tool call may add to the prompt of the passes after it, and how many such calls the body allows. */
interface LoopStep {
  tokens: number;
  calls: number;
}

export interface PassBounds {
  /** Input of the passes after the first (the first is the call's own input bound). */
  inputTokens: number;
  /** Summarising passes (compaction): their input and output, 0 when the body asks for none. */
  summaryInputTokens: number;
  summaryOutputTokens: number;
}

/**
 * The passes a loop may run, per answer: pass j reads at most `base` + the j largest steps + the output so far,
 * never more than the context window. Closed form per group of equal steps, so a cap of a billion calls costs
 * no more to bound than one (and is held, and refused, for what it allows).
 */
export function passBounds(
  base: number,
  output: number,
  steps: LoopStep[],
  opts: { window: number | null | undefined; callCap?: number | undefined; firstPass: number; compacts: boolean; summaryOutput: number },
): PassBounds {
  const window = opts.window ?? Number.POSITIVE_INFINITY;
  let left = opts.callCap ?? Number.POSITIVE_INFINITY;
  let prefix = base + output;
  let input = 0;
  let passes = 0;
  for (const step of [...steps].sort((a, b) => b.tokens - a.tokens)) {
    const calls = Math.min(step.calls, left);
    left -= calls;
    passes += calls;
    // Passes i = 1..calls of this group read prefix + i × step, each at most the window.
    const room = step.tokens > 0 ? Math.floor((window - prefix) / step.tokens) : prefix <= window ? calls : 0;
    const below = Math.max(0, Math.min(calls, room));
    input += below * prefix + (step.tokens * below * (below + 1)) / 2 + (calls - below) * window;
    prefix += calls * step.tokens;
  }
  if (!opts.compacts) return { inputTokens: input, summaryInputTokens: 0, summaryOutputTokens: 0 };
  return { inputTokens: input, summaryInputTokens: opts.firstPass + input, summaryOutputTokens: (passes + 1) * opts.summaryOutput };
}

/**
 * What each tool call of a loop may add to the prompt of the passes after it: a search's result pages, a file
 * search's chunks, an advisor's advice (its output cap, else its model's most, else the window), a fetched page
 * (the window). Under one cap for the whole call (`shared`) the vendor may spend every call on the tool whose
 * results are largest.
 */
export function loopSteps(s: {
  calls: { web_search: number; file_search: number };
  perCall: { web_search: number; file_search: number };
  shared: boolean;
  advisors: { calls: number; tokens: number | null | undefined }[];
  fetchUses: number[];
  window: number;
}): LoopStep[] {
  const steps: LoopStep[] = [];
  // A tool the body allows no call of adds no step.
  const add = (calls: number, tokens: number) => {
    if (calls > 0) steps.push({ calls, tokens });
  };
  if (s.shared) add(s.calls.web_search + s.calls.file_search, Math.max(s.perCall.web_search, s.perCall.file_search));
  else {
    add(s.calls.web_search, s.perCall.web_search);
    add(s.calls.file_search, s.perCall.file_search);
  }
  for (const a of s.advisors) add(a.calls, a.tokens ?? s.window);
  for (const uses of s.fetchUses) add(uses, s.window);
  return steps;
}

/**
 * Tool calls of a loop whose results no field of the body bounds: a remote MCP server's (a result as large as its
 * server makes it: each pass may fill the window) and a tool search's (definitions of the body's own deferred
 * tools: at most the prompt again). As many as the format's cap for the whole call allows when the body has one
 * (cap-server-tools writes it), else as many as the vendor's own loop runs (billing.yaml
 * `reservation.uncapped_loop_calls`).
 */
export function unboundedToolSteps(
  tools: ToolReading,
  body: JsonObject,
  s: { callCap?: number | undefined; loopCalls: number; window: number; prompt: number },
): LoopStep[] {
  const calls = s.callCap ?? s.loopCalls;
  const steps: LoopStep[] = [];
  if (tools.callsServers(body) || tools.sends(body, 'remote_mcp')) steps.push({ calls, tokens: s.window });
  if (tools.sends(body, 'tool_search')) steps.push({ calls, tokens: s.prompt });
  return steps;
}

/** Whether the body asks the vendor to compact its context: an entry of the format's declared list of the declared type. */
export function asksCompaction(body: JsonObject, honoured: HonouredLimits): boolean {
  const c = honoured.compaction;
  if (!c) return false;
  const holder = body[c.field];
  const list: JsonValue | undefined = isObject(holder) ? holder[c.list] : undefined;
  // A type that is not a string is read as its text, as a lax vendor reads it (["compact_…"] compacts too).
  return Array.isArray(list) && list.some((e) => isObject(e) && String(e.type).startsWith(c.type_prefix));
}

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
