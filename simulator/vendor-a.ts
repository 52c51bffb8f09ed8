// Vendor A: POST /v1/messages in the native messages format (JSON or SSE).
import { Counter, deltas, isObj, type Plan, type ToolSpec, type Turn, VendorError } from './common.ts';
import { type Ctx, planAnswer, SseWriter, sendJson } from './http.ts';

type Block = Record<string, unknown>;

function countContent(c: Counter, content: unknown): void {
  if (typeof content === 'string') return c.text(content);
  if (!Array.isArray(content)) return;
  for (const b of content) {
    if (!isObj(b)) continue;
    switch (b.type) {
      case 'text':
        c.text(b.text);
        break;
      case 'image':
        c.image();
        break;
      case 'document': {
        const src = isObj(b.source) ? b.source : {};
        if (src.type === 'text') c.text(src.data);
        else if (src.type === 'content') countContent(c, src.content);
        else if (src.type === 'base64' && src.media_type === 'application/pdf') c.pdf(src.data);
        else c.image();
        break;
      }
      case 'tool_use':
        c.json(b.input ?? {});
        break;
      case 'tool_result':
        countContent(c, b.content);
        break;
      case 'thinking':
        c.text(b.thinking);
        break;
      default:
        break;
    }
  }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b): b is Block => isObj(b) && b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('\n');
}

export function messagesTurn(body: Record<string, unknown>): Turn {
  const messages = body.messages as unknown[];
  const c = new Counter();
  if (typeof body.system === 'string') c.text(body.system);
  else countContent(c, body.system);
  for (const m of messages) if (isObj(m)) countContent(c, m.content);
  const rawTools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  if (rawTools.length > 0) c.json(rawTools);
  // Client tools: those with an input_schema (server tools such as web_search have a versioned type).
  const tools: ToolSpec[] = rawTools
    .filter(
      (t): t is Block =>
        isObj(t) && typeof t.name === 'string' && (t.input_schema !== undefined || t.type === 'custom' || t.type === undefined),
    )
    .map((t) => ({ name: t.name as string, schema: t.input_schema }));
  let userText = '';
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isObj(m) && m.role === 'user') {
      const t = textOf(m.content);
      if (t !== '') {
        userText = t;
        break;
      }
    }
  }
  const last = messages[messages.length - 1];
  let toolResult: string | undefined;
  if (isObj(last) && last.role === 'user' && Array.isArray(last.content)) {
    const tr = (last.content as unknown[]).filter((b): b is Block => isObj(b) && b.type === 'tool_result');
    if (tr.length > 0) toolResult = tr.map((b) => (typeof b.content === 'string' ? b.content : textOf(b.content))).join('\n');
  }
  let toolChoice = 'auto';
  const tc = body.tool_choice;
  if (isObj(tc)) {
    if (tc.type === 'any') toolChoice = 'required';
    else if (tc.type === 'none') toolChoice = 'none';
    else if (tc.type === 'tool' && typeof tc.name === 'string') toolChoice = tc.name;
  }
  return {
    model: String(body.model),
    userText,
    toolResult,
    tools,
    toolChoice,
    maxTokens: typeof body.max_tokens === 'number' ? body.max_tokens : undefined,
    ...webSearchCap(rawTools),
    inputTokens: c.tokens(),
  };
}

/**
 * Vendor A caps each web search tool by its own max_uses; a tool without one searches as often as the model
 * decides. Several capped tools allow the sum of their caps.
 */
function webSearchCap(tools: unknown[]): { serverToolCap?: number } {
  const search = tools.filter((t): t is Block => isObj(t) && typeof t.type === 'string' && t.type.startsWith('web_search'));
  if (search.length === 0 || search.some((t) => typeof t.max_uses !== 'number')) return {};
  return { serverToolCap: search.reduce((sum, t) => sum + (t.max_uses as number), 0) };
}

/** Whether a messages body asks for compaction (`context_management.edits` holding a `compact_…` edit). */
export function compactionAsked(body: Record<string, unknown>): { trigger: number } | undefined {
  const cm = isObj(body.context_management) ? body.context_management : undefined;
  const edit = Array.isArray(cm?.edits) ? cm.edits.find((e) => isObj(e) && String(e.type).startsWith('compact')) : undefined;
  if (!isObj(edit)) return undefined;
  const trigger = isObj(edit.trigger) && typeof edit.trigger.value === 'number' ? edit.trigger.value : 150_000;
  return { trigger };
}

/**
 * A compaction the vendor runs before answering once the prompt reaches the edit's trigger: a pass of its own
 * over the prompt, writing a summary. Reported in usage.iterations only (not in the top-level figures), and
 * billed at the model's prices.
 */
function compactionPass(body: Record<string, unknown>, turn: Turn, maxOutput: number | null | undefined) {
  const asked = compactionAsked(body);
  if (!asked || turn.inputTokens < asked.trigger) return undefined;
  const summary = Math.min(maxOutput ?? Number.POSITIVE_INFINITY, Math.max(1, Math.ceil(turn.inputTokens / 10)));
  return { input_tokens: turn.inputTokens, output_tokens: summary };
}

function validate(body: unknown): asserts body is Record<string, unknown> {
  if (!isObj(body)) throw new VendorError(400, 'The request body is not valid JSON.');
  if (typeof body.model !== 'string' || body.model === '') throw new VendorError(400, 'model: Field required');
  if (!Array.isArray(body.messages)) throw new VendorError(400, 'messages: Field required');
  if (body.messages.length === 0) throw new VendorError(400, 'messages: at least one message is required');
  if (typeof body.max_tokens !== 'number') throw new VendorError(400, 'max_tokens: Field required');
  if (body.max_tokens < 1) throw new VendorError(400, 'max_tokens: must be greater than or equal to 1');
  for (const m of body.messages) {
    if (!isObj(m) || (m.role !== 'user' && m.role !== 'assistant')) {
      throw new VendorError(400, "messages: roles must be 'user' or 'assistant' (use the top-level system field).");
    }
  }
}

const STOP: Record<Plan['stop'], string> = {
  end: 'end_turn',
  max_tokens: 'max_tokens',
  tool: 'tool_use',
  refusal: 'refusal',
  stop_sequence: 'stop_sequence',
  pause_turn: 'pause_turn',
};

/** Whether any cache breakpoint of the body asks for a write kept an hour: then the vendor writes it so, at its price. */
export function cachesForAnHour(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(cachesForAnHour);
  if (!isObj(value)) return false;
  if (isObj(value.cache_control) && value.cache_control.ttl === '1h') return true;
  return Object.values(value).some(cachesForAnHour);
}

interface UsageExtras {
  compaction?: Record<string, number> | undefined;
  hour?: boolean;
}

function usageOf(p: Plan, outputTokens: number, withInput = true, extras: UsageExtras = {}): Record<string, unknown> {
  const u: Record<string, unknown> = {};
  const { compaction, hour } = extras;
  if (compaction && withInput) {
    u.iterations = [
      { type: 'compaction', ...compaction },
      { type: 'message', input_tokens: p.usage.input, output_tokens: outputTokens },
    ];
  }
  if (withInput) {
    u.input_tokens = p.usage.input;
    u.cache_creation_input_tokens = p.usage.cache_write;
    u.cache_read_input_tokens = p.usage.cache_read;
    u.cache_creation = hour
      ? { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: p.usage.cache_write }
      : { ephemeral_5m_input_tokens: p.usage.cache_write, ephemeral_1h_input_tokens: 0 };
  }
  u.output_tokens = outputTokens;
  if (p.webSearches > 0) u.server_tool_use = { web_search_requests: p.webSearches };
  return u;
}

function buildBlocks(ctx: Ctx, p: Plan): Block[] {
  const blocks: Block[] = [];
  if (p.thinking) blocks.push({ type: 'thinking', thinking: p.thinking.text, signature: p.thinking.signature });
  for (let i = 0; i < p.webSearches; i++) {
    const id = ctx.state.nextId('srvtoolu_sim');
    blocks.push({ type: 'server_tool_use', id, name: 'web_search', input: { query: `simulated search ${i + 1}` } });
    blocks.push({
      type: 'web_search_tool_result',
      tool_use_id: id,
      content: [
        {
          type: 'web_search_result',
          url: `https://example.com/sim/${i + 1}`,
          title: `Simulated result ${i + 1}`,
          encrypted_content: Buffer.from(`sim-result-${i + 1}`).toString('base64'),
          page_age: null,
        },
      ],
    });
  }
  if (p.text !== '' || p.toolCalls.length === 0) blocks.push({ type: 'text', text: p.text });
  for (const call of p.toolCalls) {
    blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: JSON.parse(call.arguments) });
  }
  return blocks;
}

/** One content block as the vendor streams it: its start, its deltas in pieces, its stop; `ping` after the first start. */
async function streamBlock(w: SseWriter, b: Block, index: number, ping: () => Promise<void>): Promise<void> {
  if (b.type === 'text') {
    await w.event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    await ping();
    for (const d of deltas(b.text as string)) {
      await w.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: d } });
    }
  } else if (b.type === 'thinking') {
    await w.event('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    });
    await ping();
    for (const d of deltas(b.thinking as string)) {
      await w.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: d } });
    }
    await w.event('content_block_delta', {
      type: 'content_block_delta',
      index,
      delta: { type: 'signature_delta', signature: b.signature },
    });
  } else if (b.type === 'tool_use' || b.type === 'server_tool_use') {
    await w.event('content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: b.type, id: b.id, name: b.name, input: {} },
    });
    await ping();
    const json = JSON.stringify(b.input);
    // Arguments arrive in pieces, as the vendor sends them.
    const pieces = [json.slice(0, Math.ceil(json.length / 2)), json.slice(Math.ceil(json.length / 2))].filter((s) => s !== '');
    for (const piece of pieces) {
      await w.event('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: piece },
      });
    }
  } else {
    await w.event('content_block_start', { type: 'content_block_start', index, content_block: b });
    await ping();
  }
  await w.event('content_block_stop', { type: 'content_block_stop', index });
}

export async function handleMessages(ctx: Ctx): Promise<void> {
  const body = ctx.body;
  validate(body);
  const turn = messagesTurn(body);
  const p = planAnswer(ctx, turn, 'a', 'toolu_sim');
  const extras = { compaction: compactionPass(body, turn, ctx.state.maxOutput?.(turn.model)), hour: cachesForAnHour(body) };
  const id = ctx.state.nextId('msg_sim');
  const blocks = buildBlocks(ctx, p);
  const stopReason = STOP[p.stop];
  const stopSequence =
    p.stop === 'stop_sequence'
      ? Array.isArray(body.stop_sequences) && typeof body.stop_sequences[0] === 'string'
        ? (body.stop_sequences[0] as string)
        : '\n\nHuman:'
      : null;
  const requestId = ctx.state.nextId('req_sim');
  if (body.stream !== true) {
    sendJson(
      ctx.res,
      200,
      {
        id,
        type: 'message',
        role: 'assistant',
        model: turn.model,
        content: blocks,
        stop_reason: stopReason,
        stop_sequence: stopSequence,
        usage: usageOf(p, p.usage.output, true, extras),
      },
      { 'request-id': requestId },
    );
    return;
  }
  const w = new SseWriter(
    ctx,
    async (sw) => {
      await sw.raw(
        `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`,
      );
      sw.end();
    },
    { 'request-id': requestId },
  );
  await w.event('message_start', {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model: turn.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usageOf(p, 1, true, { hour: extras.hour }),
    },
  });
  // The vendor sends one `ping` right after the first content_block_start.
  let pinged = false;
  const ping = async () => {
    if (pinged) return;
    pinged = true;
    await w.event('ping', { type: 'ping' });
  };
  for (let index = 0; index < blocks.length; index++) await streamBlock(w, blocks[index]!, index, ping);
  await w.event('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: stopSequence },
    usage: usageOf(p, p.usage.output, true, extras),
  });
  await w.event('message_stop', { type: 'message_stop' });
  w.end();
}
