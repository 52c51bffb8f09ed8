// Vendor B: POST /v1/responses (JSON or named SSE events with sequence numbers).
import { randomBytes } from 'node:crypto';
import { Counter, deltas, isObj, type Plan, type ToolSpec, type Turn, VendorError } from './common.ts';
import { type Ctx, planAnswer, SseWriter, sendJson } from './http.ts';

type Obj = Record<string, unknown>;

function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p): p is Obj => isObj(p) && (p.type === 'input_text' || p.type === 'text') && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n');
}

function countParts(c: Counter, content: unknown): void {
  if (typeof content === 'string') return c.text(content);
  if (!Array.isArray(content)) return;
  for (const p of content) {
    if (!isObj(p)) continue;
    if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') c.text(p.text);
    else if (p.type === 'input_image') c.image();
    else if (p.type === 'input_file') c.pdf(p.file_data);
  }
}

export function responsesTurn(body: Obj): Turn {
  const c = new Counter();
  c.text(body.instructions);
  const items: unknown[] =
    typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? body.input : [];
  for (const it of items) {
    if (!isObj(it)) continue;
    if (it.type === 'function_call') c.text(it.arguments);
    else if (it.type === 'function_call_output' || it.type === 'custom_tool_call_output') {
      if (typeof it.output === 'string') c.text(it.output);
      else countParts(c, it.output);
    } else if (it.role !== undefined) countParts(c, it.content);
  }
  const rawTools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  if (rawTools.length > 0) c.json(rawTools);
  const tools: ToolSpec[] = rawTools
    .filter((t): t is Obj => isObj(t) && (t.type === 'function' || t.type === 'custom') && typeof t.name === 'string')
    .map((t) => ({ name: t.name as string, schema: t.parameters }));
  let userText = '';
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if (isObj(it) && it.role === 'user') {
      const t = partsText(it.content);
      if (t !== '') {
        userText = t;
        break;
      }
    }
  }
  const last = items[items.length - 1];
  let toolResult: string | undefined;
  if (isObj(last) && (last.type === 'function_call_output' || last.type === 'custom_tool_call_output')) {
    toolResult = typeof last.output === 'string' ? last.output : partsText(last.output);
  }
  let toolChoice = 'auto';
  const tc = body.tool_choice;
  if (tc === 'none' || tc === 'required') toolChoice = tc;
  else if (isObj(tc) && typeof tc.name === 'string') toolChoice = tc.name;
  return {
    model: String(body.model),
    userText,
    toolResult,
    tools,
    toolChoice,
    maxTokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined,
    // max_tool_calls caps the built-in tool calls of the whole response, whichever tools make them.
    ...(typeof body.max_tool_calls === 'number' ? { serverToolCap: body.max_tool_calls } : {}),
    inputTokens: c.tokens(),
  };
}

function usageOf(p: Plan): Obj {
  const input = p.usage.input + p.usage.cache_read;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: p.usage.cache_read },
    output_tokens: p.usage.output,
    output_tokens_details: { reasoning_tokens: p.usage.reasoning },
    total_tokens: input + p.usage.output,
  };
}

/**
 * An id of something the vendor stores (the response, its output items): unique across simulators and restarts,
 * as the vendor's are, since the gateway records whose each one is in a database that outlives a simulator.
 */
const storedId = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

/** The response object as the vendor shows it at `status`: the request's settings read back, its output and usage. */
function responseObject(
  body: Obj,
  made: { id: string; createdAt: number; model: string },
  status: string,
  out: Obj[],
  usage: Obj | null,
): Obj {
  const { id, createdAt } = made;
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: typeof body.instructions === 'string' ? body.instructions : null,
    max_output_tokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : null,
    model: made.model,
    output: out,
    parallel_tool_calls: body.parallel_tool_calls !== false,
    previous_response_id: typeof body.previous_response_id === 'string' ? body.previous_response_id : null,
    reasoning: isObj(body.reasoning) ? { effort: body.reasoning.effort ?? null, summary: null } : { effort: null, summary: null },
    service_tier: 'default',
    store: body.store !== false,
    temperature: typeof body.temperature === 'number' ? body.temperature : 1,
    text: isObj(body.text) ? body.text : { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_p: typeof body.top_p === 'number' ? body.top_p : 1,
    truncation: 'disabled',
    usage,
    user: null,
    metadata: isObj(body.metadata) ? body.metadata : {},
  };
}

type Emit = (type: string, fields: Obj) => Promise<void>;

/** One output item as the vendor streams it: added, its parts and deltas in pieces, done. */
async function streamItem(ev: Emit, item: Obj, output_index: number): Promise<void> {
  const item_id = item.id as string;
  if (item.type === 'web_search_call') {
    await ev('response.output_item.added', { output_index, item: { type: 'web_search_call', id: item_id, status: 'in_progress' } });
    await ev('response.web_search_call.in_progress', { output_index, item_id });
    await ev('response.web_search_call.searching', { output_index, item_id });
    await ev('response.web_search_call.completed', { output_index, item_id });
    await ev('response.output_item.done', { output_index, item });
  } else if (item.type === 'message') {
    const part = (item.content as Obj[])[0]!;
    await ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
    if (part.type === 'refusal') {
      await ev('response.content_part.added', { item_id, output_index, content_index: 0, part: { type: 'refusal', refusal: '' } });
      for (const d of deltas(part.refusal as string)) {
        await ev('response.refusal.delta', { item_id, output_index, content_index: 0, delta: d });
      }
      await ev('response.refusal.done', { item_id, output_index, content_index: 0, refusal: part.refusal });
    } else {
      await ev('response.content_part.added', {
        item_id,
        output_index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
      for (const d of deltas(part.text as string)) {
        await ev('response.output_text.delta', { item_id, output_index, content_index: 0, delta: d, logprobs: [] });
      }
      await ev('response.output_text.done', { item_id, output_index, content_index: 0, text: part.text, logprobs: [] });
    }
    await ev('response.content_part.done', { item_id, output_index, content_index: 0, part });
    await ev('response.output_item.done', { output_index, item });
  } else if (item.type === 'function_call') {
    await ev('response.output_item.added', { output_index, item: { ...item, arguments: '', status: 'in_progress' } });
    const args = item.arguments as string;
    const half = Math.ceil(args.length / 2);
    for (const piece of [args.slice(0, half), args.slice(half)].filter((s) => s !== '')) {
      await ev('response.function_call_arguments.delta', { item_id, output_index, delta: piece });
    }
    await ev('response.function_call_arguments.done', { item_id, output_index, name: item.name, arguments: args });
    await ev('response.output_item.done', { output_index, item });
  }
}

export async function handleResponses(ctx: Ctx): Promise<void> {
  const body = ctx.body;
  if (!isObj(body)) throw new VendorError(400, 'We could not parse the JSON body of your request.');
  if (typeof body.model !== 'string' || body.model === '') throw new VendorError(400, "Missing required parameter: 'model'.", 'model');
  const turn = responsesTurn(body);
  const p = planAnswer(ctx, turn, 'b', 'call_sim');
  const id = storedId('resp_sim');
  const createdAt = Math.floor(Date.now() / 1000);
  const incomplete = p.stop === 'max_tokens';

  // Output items, complete.
  const output: Obj[] = [];
  for (let i = 0; i < p.webSearches; i++) {
    output.push({
      type: 'web_search_call',
      id: storedId('ws_sim'),
      status: 'completed',
      action: { type: 'search', query: `simulated search ${i + 1}` },
    });
  }
  if (p.text !== '' || p.toolCalls.length === 0) {
    const part =
      p.stop === 'refusal' ? { type: 'refusal', refusal: p.text } : { type: 'output_text', text: p.text, annotations: [], logprobs: [] };
    output.push({
      type: 'message',
      id: storedId('msg_sim'),
      status: incomplete ? 'incomplete' : 'completed',
      role: 'assistant',
      content: [part],
    });
  }
  for (const call of p.toolCalls) {
    output.push({
      type: 'function_call',
      id: storedId('fc_sim'),
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      status: 'completed',
    });
  }
  const response = (status: string, out: Obj[], usage: Obj | null) =>
    responseObject(body, { id, createdAt, model: turn.model }, status, out, usage);
  const finalStatus = incomplete ? 'incomplete' : 'completed';
  const headers = { 'x-request-id': ctx.state.nextId('req_sim') };
  if (body.stream !== true) {
    sendJson(ctx.res, 200, response(finalStatus, output, usageOf(p)), headers);
    return;
  }
  let seq = 0;
  const w = new SseWriter(
    ctx,
    async (sw) => {
      await sw.raw(
        `event: error\ndata: ${JSON.stringify({ type: 'error', code: 'server_error', message: 'The server had an error while processing your request.', param: null, sequence_number: seq++ })}\n\n`,
      );
      sw.end();
    },
    headers,
  );
  const ev = (type: string, fields: Obj) => w.event(type, { type, sequence_number: seq++, ...fields });
  await ev('response.created', { response: response('in_progress', [], null) });
  await ev('response.in_progress', { response: response('in_progress', [], null) });
  for (let output_index = 0; output_index < output.length; output_index++) await streamItem(ev, output[output_index]!, output_index);
  await ev(incomplete ? 'response.incomplete' : 'response.completed', { response: response(finalStatus, output, usageOf(p)) });
  w.end();
}
