// HTTP plumbing of the simulator: the per-request context, JSON answers, and an SSE writer that writes each
// event separately and can be cut by a `stream-error` fault.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorBody, type ErrorFlavor } from './common.ts';

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
  /** Set when a `stream-error` fault applies to this (streaming) request. */
  streamFault?: { afterEvents: number };
}

export class StreamCut extends Error {}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
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
      await this.cut(this);
      throw new StreamCut('stream-error fault');
    }
    if (this.count > 0) {
      if (this.ctx.state.streamChunkDelayMs > 0) await sleep(this.ctx.state.streamChunkDelayMs);
      else await tick();
    }
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    await this.raw((name ? `event: ${name}\n` : '') + `data: ${payload}\n\n`);
    this.count += 1;
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
