// What a text call's body lets the vendor do, as upper bounds the reservation prices; each must stay at or above
// what the vendor will count (billing.yaml `reservation` says why each allowance is enough). A limit read here that
// is not a positive whole number is a 400, so it can never lower the hold.

import { derivedFrom } from '../core/derived.ts';
import { errors } from '../core/errors.ts';
import type { ImageReading } from '../core/image-parts.ts';
import { fieldsPullContent, framedTurns } from '../core/prompt-fields.ts';
import type { HonouredLimits } from '../core/protocol.ts';
import type { ServerToolKind, ToolReading } from '../core/tool-fields.ts';
import { isJsonObject, type JsonObject, type JsonValue, type ModelEntry } from '../core/types.ts';
import { type BodyMeasure, measureBody } from './body-measure.ts';
import type { BillingConfig } from './config.ts';
import { asksCompaction, loopSteps, type PassBounds, passBounds, unboundedToolSteps } from './pass-bounds.ts';
import { everyFormatsLimits, everyFormatsPrompt, everyFormatsTools } from './wire-format.ts';

export interface TextBounds {
  inputTokens: number;
  /** Output of all choices together. */
  outputTokens: number;
  /** Server-tool calls of all choices together. */
  serverToolCalls: { web_search: number; file_search: number };
  /** Whether the vendor may write the prompt cache for this body (the cache-write price is then held). */
  cacheWrites: boolean;
  /** Whether the body asks for a write kept an hour (`ttl: '1h'` on a breakpoint): its dearer price is then held. */
  cacheWritesHour: boolean;
  /** The output limit sent that sets the output bound, as the body names it; absent when none was sent. */
  outputLimit?: { field: string; value: number };
  /** Output tokens held per choice. */
  outputPerChoice: number;
  /** Answers asked for, and the field that asked (absent when one answer). */
  choices: { count: number; field?: string };
  /** Advisor tools: the model each runs, its uses, and the output it may write per use (null: its model's max). */
  advisors: { model: JsonValue | undefined; at: string; uses: number; outputPerUse: number | null }[];
  /** The passes of a server-side tool loop after the first, and any summarising passes, of all choices together. */
  passes: PassBounds;
}

/**
 * What the bounds may ask of the catalog: another model's most output (an advisor's, whose advice enters the
 * prompt); and how the vendor's format reads the body's images (absent: no content part's payload is left out).
 */
interface BoundsContext {
  maxOutputOf?: (id: string) => number | null | undefined;
  images?: ImageReading;
}

/**
 * Upper bounds for a text call from the body that goes to the vendor, whose wire format honours `honoured`
 * (transforms/protocols/). A token is at least one byte of text, so the body's bytes bound the
 * input (images count a fixed allowance instead of their base64 bytes); the context window bounds it too.
 */
export function textBounds(
  model: ModelEntry,
  body: JsonObject,
  billing: BillingConfig,
  honoured: HonouredLimits,
  ctx: BoundsContext = {},
): TextBounds {
  const r = billing.reservation;
  // Every format's tool declarations, read once for the call's every walk of its tools.
  const tools = everyFormatsTools();
  checkLimitFields(tools, body);

  const measure = measureBody(body, ctx.images);
  let inputTokens = measure.bytes + measure.images * r.image_input_tokens + vendorAddedTokens(tools, model, body, billing);
  // A document the vendor fetches by URL or file id, or a page its fetch tool reads, enters the prompt at a
  // size the body does not show: only the context window bounds it.
  if (model.context_window && pullsContentIn(body, measure)) inputTokens = model.context_window;
  if (model.context_window) inputTokens = Math.min(inputTokens, model.context_window);
  const promptTokens = inputTokens;

  // A model produces at most max_output (models without output, such as embeddings, have none).
  const cap = model.max_output ?? 0;
  const outputLimit = largestLimit(body, honoured.output ?? []);
  const outputPerChoice = outputLimit ? Math.min(outputLimit.value, cap) : cap;
  const choices = choicesOf(body, honoured.choices, r.max_choices);
  const callCap = honoured.tool_calls ? positiveCount(body[honoured.tool_calls], honoured.tool_calls) : undefined;
  const perChoiceTools = serverToolBounds(tools, body, honoured, callCap, r.max_server_tool_calls, billing.server_tools);
  // Each search's result pages, and each file search's chunks, come back as input the body does not show.
  // Per call of each tool the body sends (0 for a kind it does not).
  const perCall = {
    web_search: tools.sends(body, 'web_search') ? r.search_result_tokens : 0,
    file_search: fileSearchResultsPerCall(tools, body, honoured, r.file_search_results) * r.file_search_chunk_tokens,
  };
  const resultTokens = resultTokensOf(perChoiceTools, perCall, honoured.tool_calls !== undefined && body[honoured.tool_calls] != null);
  if (resultTokens > 0) {
    inputTokens += resultTokens * choices.count;
    if (model.context_window) inputTokens = Math.min(inputTokens, model.context_window);
  }

  const advisors = advisorBounds(tools, body, honoured, callCap ?? r.max_server_tool_calls);
  const fetchUses = tools
    .toolsOf(body)
    .flatMap((t, i) =>
      isJsonObject(t) && tools.runs('fetch', t.type)
        ? [toolCount(t, toolAt(tools, body, i), honoured.tool_uses) ?? r.max_server_tool_calls]
        : [],
    );
  const steps = loopSteps({
    calls: perChoiceTools,
    perCall,
    shared: callCap !== undefined,
    advisors: advisors.map((a) => ({
      calls: a.uses,
      tokens: a.outputPerUse ?? (typeof a.model === 'string' ? ctx.maxOutputOf?.(a.model) : null),
    })),
    fetchUses,
    window: model.context_window ?? 0,
  });
  const loopCalls = r.uncapped_loop_calls?.[model.vendor] ?? r.max_server_tool_calls;
  steps.push(...unboundedToolSteps(tools, body, { callCap, loopCalls, window: model.context_window ?? 0, prompt: promptTokens }));
  const loop = passBounds(promptTokens, outputPerChoice, steps, {
    window: model.context_window,
    callCap,
    firstPass: inputTokens / choices.count,
    compacts: asksCompaction(body, honoured),
    summaryOutput: cap,
  });
  const passes = {
    inputTokens: loop.inputTokens * choices.count,
    summaryInputTokens: loop.summaryInputTokens * choices.count,
    summaryOutputTokens: loop.summaryOutputTokens * choices.count,
  };

  return {
    inputTokens,
    outputTokens: outputPerChoice * choices.count,
    serverToolCalls: { web_search: perChoiceTools.web_search * choices.count, file_search: perChoiceTools.file_search * choices.count },
    cacheWrites: !r.cache_writes_when_marked.includes(model.vendor) || measure.marksCache,
    cacheWritesHour: measure.marksCacheHour,
    ...(outputLimit ? { outputLimit } : {}),
    outputPerChoice,
    choices,
    advisors,
    passes,
  };
}

/** Each advisor tool's uses (its own cap, else `uncapped`: the call's cap or the default) and per-use output cap. */
function advisorBounds(tools: ToolReading, body: JsonObject, honoured: HonouredLimits, uncapped: number): TextBounds['advisors'] {
  return tools.toolsOf(body).flatMap((t, i) => {
    if (!isJsonObject(t) || !tools.runs('advisor', t.type)) return [];
    const at = toolAt(tools, body, i);
    const uses = toolCount(t, at, honoured.tool_uses) ?? uncapped;
    return [{ model: t.model, at: `${at()}.model`, uses, outputPerUse: toolCount(t, at, 'max_tokens') ?? null }];
  });
}

/**
 * Input the server tools' results add per answer. Under one cap for the whole call the vendor may spend every call
 * on the tool whose results are largest, whichever the fees held first (serverToolBounds), so each call is held
 * at the largest results of the tools sent.
 */
function resultTokensOf(calls: TextBounds['serverToolCalls'], perCall: Record<ServerToolKind, number>, shared: boolean): number {
  const kinds = Object.keys(perCall) as ServerToolKind[];
  if (!shared) return kinds.reduce((sum, k) => sum + calls[k] * perCall[k], 0);
  const total = kinds.reduce((sum, k) => sum + calls[k], 0);
  return total * Math.max(...kinds.map((k) => perCall[k]));
}

/**
 * The most chunks one file search call may feed back: the largest result cap of the body's file search tools (a
 * tool without one is sent `written`, by cap-server-tools). A format without such a field holds `written` too.
 */
function fileSearchResultsPerCall(reading: ToolReading, body: JsonObject, honoured: HonouredLimits, written: number): number {
  const tools = reading.toolsOf(body);
  let most = 0;
  for (let i = 0; i < tools.length; i++) {
    const t = tools[i];
    if (!isJsonObject(t) || reading.kindOf(t.type) !== 'file_search') continue;
    const cap = toolCount(t, toolAt(reading, body, i), honoured.tool_results);
    most = Math.max(most, cap ?? written);
  }
  return most;
}

// ---------------------------------------------------------------------------------------------
// Limits

/**
 * A limit that is present must be a positive whole number; null is the same as absent (the vendor's default).
 * 0 is refused for every limit: an output limit of 0 and n 0 ask for nothing, and vendor A refuses max_uses 0
 * (its minimum is 1; a client that wants no searches leaves the tool out).
 */
function positiveCount(value: JsonValue | undefined, at: string): number | undefined {
  if (isCountOrAbsent(value)) return value ?? undefined;
  throw errors.invalidRequest(`${at} must be a positive whole number (1 or more); got ${shown(value)}.`, at);
}

const isCountOrAbsent = (value: JsonValue | undefined): value is number | null | undefined =>
  value === undefined || value === null || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1);

/** A tool's limit `field` (none: the format has no such field), as positiveCount; its path `at` is read only if refused. */
function toolCount(tool: JsonObject, at: () => string, field: string | undefined): number | undefined {
  if (!field) return undefined;
  const value = tool[field];
  return isCountOrAbsent(value) ? (value ?? undefined) : positiveCount(value, `${at()}.${field}`);
}

/** Where the body's `index`-th tool sits (`tools[2]`), asked only for an error. */
const toolAt = (tools: ToolReading, body: JsonObject, index: number) => () => tools.pathOf(body, index);

const shown = (v: JsonValue): string =>
  typeof v === 'string'
    ? `the string '${v.slice(0, 20)}'`
    : Array.isArray(v)
      ? 'an array'
      : typeof v === 'object'
        ? 'an object'
        : String(v);

/**
 * Every limit field any wire format enforces is checked wherever it is sent, even where this vendor ignores
 * it: such a value is the client's mistake whichever door it meets, and the vendor would refuse it anyway.
 */
function checkLimitFields(reading: ToolReading, body: JsonObject): void {
  const { topLevel, toolFields } = limitFieldsOf(everyFormatsLimits());
  for (const field of topLevel) positiveCount(body[field], field);
  const tools = reading.toolsOf(body);
  for (let i = 0; i < tools.length; i++) {
    const tool = tools[i];
    if (isJsonObject(tool)) for (const field of toolFields) toolCount(tool, toolAt(reading, body, i), field);
  }
}

/** Every limit field of every wire format: top-level ones, and those a tool entry carries. */
const limitFieldsOf = derivedFrom((all: HonouredLimits[]) => {
  const topLevel = all.flatMap((l) => [...(l.output ?? []), ...(l.choices ? [l.choices] : []), ...(l.tool_calls ? [l.tool_calls] : [])]);
  const toolFields = all.flatMap((l) => [...(l.tool_uses ? [l.tool_uses] : []), ...(l.tool_results ? [l.tool_results] : [])]);
  return { topLevel: [...new Set(topLevel)], toolFields: [...new Set(toolFields)] };
});

/** The largest of the output limits sent: the vendor may honour any of them, so the smaller ones bound nothing. */
function largestLimit(body: JsonObject, fields: string[]): TextBounds['outputLimit'] {
  let best: TextBounds['outputLimit'];
  for (const field of fields) {
    const value = positiveCount(body[field], field);
    if (value !== undefined && (!best || value > best.value)) best = { field, value };
  }
  return best;
}

function choicesOf(body: JsonObject, field: string | undefined, max: number): TextBounds['choices'] {
  const count = field ? positiveCount(body[field], field) : undefined;
  if (!field || count === undefined || count === 1) return { count: 1 };
  if (count > max)
    throw errors.invalidRequest(`${field} may be at most ${max}: each answer is held in full before the call. Got ${count}.`, field);
  return { count, field };
}

/**
 * Server-tool calls per answer. Each tool is bounded by its own cap (`tool_uses`) or, uncapped, by
 * `unbounded`; a cap on the whole call (`tool_calls`) bounds them all together and may exceed the per-tool
 * allowance. Under one call cap the vendor may spend every call on any tool, so the dearest tools are held first.
 */
function serverToolBounds(
  reading: ToolReading,
  body: JsonObject,
  honoured: HonouredLimits,
  callCap: number | undefined,
  unbounded: number,
  prices: Record<string, number>,
): TextBounds['serverToolCalls'] {
  const out = { web_search: 0, file_search: 0 };
  const tools = reading.toolsOf(body);
  for (let i = 0; i < tools.length; i++) {
    const t = tools[i];
    if (!isJsonObject(t)) continue;
    const kind = reading.kindOf(t.type);
    if (!kind) continue;
    out[kind] += toolCount(t, toolAt(reading, body, i), honoured.tool_uses) ?? callCap ?? unbounded;
  }
  if (callCap === undefined) return out;
  let left = callCap;
  const dearestFirst = (Object.keys(out) as ServerToolKind[]).sort((a, b) => (prices[b] ?? 0) - (prices[a] ?? 0));
  for (const kind of dearestFirst) {
    out[kind] = Math.min(out[kind], left);
    left -= out[kind];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Input

/** Tokens the vendor adds beyond the body's text, each only where it adds them. */
function vendorAddedTokens(reading: ToolReading, model: ModelEntry, body: JsonObject, billing: BillingConfig): number {
  const r = billing.reservation;
  // vendor-references.ts refuses a config whose tables miss a vendor. The turns are those of every format's fields
  // (Protocol `prompt`): a list another format declares still frames turns if the vendor reads it.
  const turns = framedTurns(body, everyFormatsPrompt());
  let tokens = r.framing_per_call[model.vendor]! + turns * r.framing_per_message[model.vendor]!;
  // A typed tool the body does not define (a format's `tools.body_defined`) is the vendor's, defined outside the body.
  const tools = reading.toolsOf(body);
  if (tools.length > 0) tokens += r.tool_prompt_tokens;
  for (const t of tools) {
    if (isJsonObject(t) && typeof t.type === 'string' && !reading.isBodyDefined(t.type)) tokens += r.vendor_tool_tokens;
  }
  return tokens;
}

/**
 * Whether the vendor will put content into the prompt that the body only points at, or bill past its bytes, as the
 * formats declare it (Protocol `prompt.pulls`: files by URL or id, inline PDFs billed per page, page fetches, remote
 * MCP servers, stored conversations replayed). Then the body's bytes do not bound its input, and the hold must not
 * rely on them. Every format's declarations count, whatever the vendor's: reading only its own would lower a hold.
 */
const pullsContentIn = (body: JsonObject, measure: BodyMeasure): boolean =>
  measure.pointsAtContent || fieldsPullContent(body, everyFormatsPrompt());
