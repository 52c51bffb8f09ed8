// HTTP plumbing of the simulator: the per-request context, JSON answers, and an SSE writer that writes each
// event separately and can be cut by a `stream-error` fault.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ErrorFlavor, errorBody, type Plan, plan, type Turn, VendorError } from './common.ts';
import { type OutcomeDraft, rewriteUsage } from './outcomes.ts';

export interface Job {
  id: string;
  route: string;
  createdAt: number;
  model: string;
  prompt: string;
  duration: number;
  tags: import('./common.ts').Tags;
}

export interface SimState {
  baseUrl: string;
  videoStepMs: number;
  streamChunkDelayMs: number;
  jobs: Map<string, Job>;
  nextId(prefix: string): string;
  counter(): number;
  /** Waits `ms`, or less when the simulator closes (a stall must not keep it open). */
  wait(ms: number): Promise<void>;
  /** A model's context window in tokens (null or absent: none), to refuse longer input as the vendor does. */
  contextWindow?: ((model: string) => number | null | undefined) | undefined;
  /** The most output a model writes (null or absent: no bound): a larger limit is refused and output stops there. */
  maxOutput?: ((model: string) => number | null | undefined) | undefined;
}

/**
 * A fault that acts on a stream once `afterEvents` events are out:
 * - `error`: the vendor's own error frame(s), then the stream ends (the handler's `cut`);
 * - `reset`: the socket is destroyed, no error event, no end;
 * - `garbage`: lines no SSE parser can use and a data frame of broken JSON, then the stream goes on to its end;
 * - `stall`: nothing more for `stallMs`, then the socket is destroyed.
 */
interface StreamFault {
  afterEvents: number;
  mode: 'error' | 'reset' | 'garbage' | 'stall';
  stallMs?: number;
}

export interface Ctx {
  route: string;
  /** Vendor path below the route, without query: `/v1/messages`. */
  path: string;
  method: string;
  req: IncomingMessage;
  res: ServerResponse;
  body: unknown;
  state: SimState;
  /** Set when a stream fault applies to this (streaming) request. */
  streamFault?: StreamFault | undefined;
  /** The outcome record of this request (what was delivered, what it bills). */
  draft: OutcomeDraft;
}

/** Each response's outcome draft, so `sendJson` (which sees only the response) can apply usage faults. */
const drafts = new WeakMap<ServerResponse, OutcomeDraft>();
export function attachDraft(res: ServerResponse, draft: OutcomeDraft): void {
  drafts.set(res, draft);
}
/** Handlers tell what the answer's usage really is, before any usage fault rewrites it on the wire. */
/**
 * Input past the model's context window is refused as each vendor refuses it (400, its own words), counted as the
 * simulator counts it (simulator/common.ts), so a prompt a real vendor would not take is never answered or billed.
 */
function refuseBeyondContext(ctx: Ctx, turn: Turn, flavor: ErrorFlavor): void {
  refuseOutputPastMax(ctx, turn, flavor);
  const window = ctx.state.contextWindow?.(turn.model);
  if (!window || turn.inputTokens <= window) return;
  throw new VendorError(
    400,
    flavor === 'a'
      ? `prompt is too long: ${turn.inputTokens} tokens > ${window} maximum`
      : `This model's maximum context length is ${window} tokens. However, your messages resulted in ${turn.inputTokens} tokens. Please reduce the length of the messages.`,
    flavor === 'a' ? null : 'messages',
  );
}

/** An output limit above what the model can write is refused, as the vendors refuse it (never silently lowered). */
function refuseOutputPastMax(ctx: Ctx, turn: Turn, flavor: ErrorFlavor): void {
  const most = ctx.state.maxOutput?.(turn.model);
  if (!most || turn.maxTokens === undefined || turn.maxTokens <= most) return;
  throw new VendorError(
    400,
    flavor === 'a'
      ? `max_tokens: ${turn.maxTokens} > ${most}, which is the maximum allowed number of output tokens for ${turn.model}`
      : `max_tokens is too large: ${turn.maxTokens}. This model supports at most ${most} completion tokens, whereas you provided ${turn.maxTokens}.`,
    flavor === 'a' ? null : 'max_tokens',
  );
}

/**
 * The answer to a text turn as the vendor writes it: what the vendor refuses is refused (a limit above the model's
 * most among it), and with no limit sent the output stops at the model's most, where the real vendors stop, so
 * the answer ends as length-capped. The planned usage goes to the outcome record.
 */
export function planAnswer(ctx: Ctx, turn: Turn, flavor: ErrorFlavor, toolIdPrefix: string): Plan {
  refuseBeyondContext(ctx, turn, flavor);
  const most = ctx.state.maxOutput?.(turn.model);
  const limit = most && (turn.maxTokens === undefined || turn.maxTokens > most) ? most : turn.maxTokens;
  const p = plan({ ...turn, maxTokens: limit }, (prefix) => ctx.state.nextId(prefix), toolIdPrefix);
  planUsage(ctx, p.usage);
  return p;
}

function planUsage(ctx: Ctx, usage: OutcomeDraft['planned']): void {
  ctx.draft.planned = usage ? { ...usage } : null;
}

export class StreamCut extends Error {}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const mode = drafts.get(res)?.usageMode;
  const text = JSON.stringify(mode && status < 300 ? rewriteUsage(body, mode) : body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendError(
  res: ServerResponse,
  flavor: ErrorFlavor,
  status: number,
  message: string,
  param: string | null = null,
  headers: Record<string, string> = {},
): void {
  const extra: Record<string, string> = { ...headers };
  if (flavor === 'a' && status >= 500) extra['x-should-retry'] = extra['x-should-retry'] ?? 'true';
  sendJson(res, status, errorBody(flavor, status, message, param), extra);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const tick = () => new Promise<void>((r) => setImmediate(r));

/**
 * Writes SSE events one `res.write` at a time. `cut` is what the vendor sends when a stream-error fault fires
 * (after `afterEvents` events): it writes its own error frame(s) and then ends or destroys the response.
 */
export class SseWriter {
  private count = 0;
  private started = false;
  constructor(
    private readonly ctx: Ctx,
    private readonly cut: (w: SseWriter) => Promise<void>,
    private readonly headers: Record<string, string> = {},
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    this.ctx.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...this.headers,
    });
    this.ctx.res.flushHeaders();
  }

  /** Writes one raw frame; resolves once it is handed to the socket (waits for drain under back-pressure). */
  async raw(frame: string): Promise<void> {
    const res = this.ctx.res;
    if (res.destroyed || res.writableEnded) throw new StreamCut('client gone');
    const ok = res.write(frame);
    if (!ok) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }

  /** One SSE event: `event:` line when named, `data:` line (objects are JSON). */
  async event(name: string | undefined, data: unknown): Promise<void> {
    this.start();
    const fault = this.ctx.streamFault;
    if (fault && this.count >= fault.afterEvents) {
      this.ctx.streamFault = undefined;
      if (fault.mode === 'garbage') {
        // Not an SSE field, a comment, and a data frame cut inside its JSON; then the stream carries on.
        await this.raw('this is not a server-sent event\n: a comment line\ndata: {"broken": [1, 2,\n\n');
      } else {
        this.ctx.draft.cut = true;
        if (fault.mode === 'error') await this.cut(this);
        else {
          if (fault.mode === 'stall') await this.ctx.state.wait(fault.stallMs ?? 0);
          await this.abort();
        }
        throw new StreamCut(`stream fault: ${fault.mode}`);
      }
    }
    if (this.count > 0) {
      if (this.ctx.state.streamChunkDelayMs > 0) await sleep(this.ctx.state.streamChunkDelayMs);
      else await tick();
    }
    const mode = this.ctx.draft.usageMode;
    const payload = typeof data === 'string' ? data : JSON.stringify(mode ? rewriteUsage(data, mode) : data);
    await this.raw(`${name ? `event: ${name}\n` : ''}data: ${payload}\n\n`);
    this.count += 1;
    this.ctx.draft.outcome.events = this.count;
  }

  end(): void {
    this.start();
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
  }

  /** Ends the connection abruptly after what was written has been flushed. */
  async abort(): Promise<void> {
    const res = this.ctx.res;
    await new Promise<void>((resolve) => {
      if (res.destroyed) return resolve();
      res.write('', () => resolve());
    });
    res.socket?.destroy();
    res.destroy();
  }
}

/** Reads the whole request body. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
