// Vendors B to E: POST /v1/chat/completions (JSON or SSE chunks ending in `data: [DONE]`).
import { Counter, deltas, isObj, type Plan, type ToolSpec, type Turn, VendorError } from './common.ts';
import { type Ctx, planAnswer, SseWriter, sendJson } from './http.ts';

type Obj = Record<string, unknown>;

function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p): p is Obj => isObj(p) && p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('\n');
}

export function chatTurn(body: Obj): Turn {
  const messages = body.messages as unknown[];
  const c = new Counter();
  for (const m of messages) {
    if (!isObj(m)) continue;
    if (typeof m.content === 'string') c.text(m.content);
    else if (Array.isArray(m.content)) {
      for (const part of m.content) {
        if (!isObj(part)) continue;
        if (part.type === 'text') c.text(part.text);
        else if (part.type === 'image_url') c.image();
        else if (part.type === 'file' && isObj(part.file)) c.pdf(part.file.file_data);
      }
    }
    if (Array.isArray(m.tool_calls)) {
      for (const tc of m.tool_calls) if (isObj(tc) && isObj(tc.function)) c.text(tc.function.arguments);
    }
  }
  const rawTools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  if (rawTools.length > 0) c.json(rawTools);
  const tools: ToolSpec[] = [];
  for (const t of rawTools) {
    if (!isObj(t)) continue;
    if (t.type === 'function' && isObj(t.function) && typeof t.function.name === 'string') {
      tools.push({ name: t.function.name, schema: t.function.parameters });
    } else if (t.type === 'custom' && isObj(t.custom) && typeof t.custom.name === 'string') {
      tools.push({ name: t.custom.name, schema: undefined });
    }
  }
  let userText = '';
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isObj(m) && m.role === 'user') {
      const t = partsText(m.content);
      if (t !== '') {
        userText = t;
        break;
      }
    }
  }
  const last = messages[messages.length - 1];
  const toolResult = isObj(last) && last.role === 'tool' ? partsText(last.content) : undefined;
  let toolChoice = 'auto';
  const tc = body.tool_choice;
  if (tc === 'none' || tc === 'required') toolChoice = tc;
  else if (isObj(tc) && isObj(tc.function) && typeof tc.function.name === 'string') toolChoice = tc.function.name;
  else if (isObj(tc) && isObj(tc.custom) && typeof tc.custom.name === 'string') toolChoice = tc.custom.name;
  const maxTokens =
    typeof body.max_completion_tokens === 'number'
      ? body.max_completion_tokens
      : typeof body.max_tokens === 'number'
        ? body.max_tokens
        : undefined;
  return { model: String(body.model), userText, toolResult, tools, toolChoice, maxTokens, inputTokens: c.tokens() };
}

const FINISH: Record<Plan['stop'], string> = {
  end: 'stop',
  max_tokens: 'length',
  tool: 'tool_calls',
  refusal: 'content_filter',
  stop_sequence: 'stop',
  pause_turn: 'stop',
};

/**
 * Vendor D (its model ids start with `d-`) counts reasoning apart: `completion_tokens` is the answer's text alone,
 * and `total_tokens` holds the reasoning too, as its public API does. The others count it inside completion_tokens.
 */
const countsReasoningApart = (model: unknown): boolean => typeof model === 'string' && model.startsWith('d-');

function usageOf(p: Plan, model: unknown): Obj {
  const prompt = p.usage.input + p.usage.cache_read;
  const completion = countsReasoningApart(model) ? Math.max(0, p.usage.output - p.usage.reasoning) : p.usage.output;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + p.usage.output,
    prompt_tokens_details: { cached_tokens: p.usage.cache_read, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: p.usage.reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

export async function handleChat(ctx: Ctx): Promise<void> {
  const body = ctx.body;
  if (!isObj(body)) throw new VendorError(400, 'We could not parse the JSON body of your request.');
  if (typeof body.model !== 'string' || body.model === '') throw new VendorError(400, 'you must provide a model parameter', 'model');
  if (!Array.isArray(body.messages)) throw new VendorError(400, "Missing required parameter: 'messages'.", 'messages');
  if (body.messages.length === 0) throw new VendorError(400, "Invalid 'messages': empty array.", 'messages');
  const turn = chatTurn(body);
  const p = planAnswer(ctx, turn, 'b', 'call_sim');
  const id = ctx.state.nextId('chatcmpl-sim');
  const created = Math.floor(Date.now() / 1000);
  const finish = FINISH[p.stop];
  const model = turn.model;
  const toolCalls = p.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  const headers = { 'x-request-id': ctx.state.nextId('req_sim') };
  if (body.stream !== true) {
    const message: Obj = {
      role: 'assistant',
      content: toolCalls.length > 0 && p.text === '' ? null : p.text,
      refusal: null,
      annotations: [],
    };
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    sendJson(
      ctx.res,
      200,
      {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
        usage: usageOf(p, body.model),
        service_tier: 'default',
        system_fingerprint: null,
      },
      headers,
    );
    return;
  }
  const includeUsage = isObj(body.stream_options) && body.stream_options.include_usage === true;
  const w = new SseWriter(
    ctx,
    async (sw) => {
      await sw.raw(
        `data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } })}\n\n`,
      );
      await sw.abort();
    },
    headers,
  );
  const chunk = (delta: Obj, finishReason: string | null = null): Obj => {
    const c: Obj = {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      service_tier: 'default',
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
    if (includeUsage) c.usage = null;
    return c;
  };
  await w.event(undefined, chunk({ role: 'assistant', content: toolCalls.length > 0 && p.text === '' ? null : '', refusal: null }));
  for (const d of deltas(p.text)) await w.event(undefined, chunk({ content: d }));
  for (let index = 0; index < toolCalls.length; index++) {
    const tc = toolCalls[index]!;
    await w.event(
      undefined,
      chunk({ tool_calls: [{ index, id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } }] }),
    );
    const args = tc.function.arguments;
    const half = Math.ceil(args.length / 2);
    for (const piece of [args.slice(0, half), args.slice(half)].filter((s) => s !== '')) {
      await w.event(undefined, chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  }
  await w.event(undefined, chunk({}, finish));
  if (includeUsage) {
    await w.event(undefined, {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      service_tier: 'default',
      system_fingerprint: null,
      choices: [],
      usage: usageOf(p, body.model),
    });
  }
  await w.event(undefined, '[DONE]');
  w.end();
}
