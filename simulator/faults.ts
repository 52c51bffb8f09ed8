// The faults a test can queue on a simulator route (`inject(route, fault)`; simulator/README.md, Faults), and
// which requests each applies to.
import type { ServerResponse } from 'node:http';
import { defaultMessage, type ErrorFlavor, isObj } from './common.ts';
import { type Ctx, sendError } from './http.ts';

export type Fault =
  | { kind: 'status'; status: number; times?: number; retryAfterSeconds?: number } // answer this status (vendor error body in that path's format)
  | { kind: 'reset'; times?: number } // destroy the socket without answering
  | { kind: 'delay'; ms: number; times?: number } // wait before answering
  | { kind: 'stream-error'; afterEvents: number; times?: number } // streaming: send N events then an error event (vendor A: `event: error`) / abort
  | { kind: 'reset-mid-stream'; afterEvents: number; times?: number } // streaming: N events, then the socket is destroyed (no error event)
  | { kind: 'stall'; ms: number; headers?: boolean; afterEvents?: number; times?: number } // nothing for `ms` (after the head when `headers`, or mid-stream after N events), then the socket is destroyed
  | { kind: 'malformed-json'; times?: number } // non-streaming: 200 application/json with a body cut inside its JSON
  | { kind: 'wrong-body'; body: unknown; times?: number } // non-streaming: 200 application/json with this body, not the path's answer
  | { kind: 'malformed-sse'; afterEvents: number; times?: number } // streaming: after N events, garbage lines and a data frame of broken JSON; the stream then goes on
  | { kind: 'usage-missing'; times?: number } // the answer carries no usage at all (JSON and streams)
  | { kind: 'usage-inflated'; factor?: number; times?: number }; // the output token figure multiplied (default ×1000), far past any max_tokens

const STREAM_ONLY: ReadonlySet<Fault['kind']> = new Set(['stream-error', 'reset-mid-stream', 'malformed-sse']);

export const isStreaming = (body: unknown): boolean => isObj(body) && body.stream === true;

/** Stream kinds (and a mid-stream stall) wait for a streaming request; malformed JSON for a plain one. */
function appliesTo(fault: Fault, streaming: boolean): boolean {
  if (STREAM_ONLY.has(fault.kind) || (fault.kind === 'stall' && fault.afterEvents !== undefined)) return streaming;
  if (fault.kind === 'malformed-json' || fault.kind === 'wrong-body') return !streaming;
  return true;
}

/** A 200 that claims JSON and breaks off inside it, as a proxy that cut the answer would deliver. */
function sendBrokenJson(res: ServerResponse): void {
  const text =
    '{"id":"broken_sim","object":"chat.completion","type":"message","choices":[{"index":0,"message":{"role":"assistant","content":"Simulated rep';
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A 200 of well-formed JSON in another shape than the path answers, as a vendor that mixed up its endpoints would. */
function sendWrongBody(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A route's queued faults: each applies `times` times (default 1), the first that fits the request first. */
export class FaultQueue {
  private readonly byRoute = new Map<string, { fault: Fault; left: number }[]>();

  add(route: string, fault: Fault): void {
    const q = this.byRoute.get(route) ?? [];
    q.push({ fault, left: Math.max(1, fault.times ?? 1) });
    this.byRoute.set(route, q);
  }

  clear(): void {
    this.byRoute.clear();
  }

  /** First queued fault of the route that applies to this request (stream kinds to streaming ones only, malformed JSON to plain ones). */
  take(route: string, streaming: boolean): Fault | undefined {
    const q = this.byRoute.get(route);
    const i = q ? q.findIndex((f) => appliesTo(f.fault, streaming)) : -1;
    if (!q || i < 0) return undefined;
    const f = q[i]!;
    f.left -= 1;
    if (f.left <= 0) q.splice(i, 1);
    return f.fault;
  }
}

/**
 * Applies the fault to the request: true when it answered (or cut) the request itself, false when the path's handler
 * is to answer, with the stream or usage fault it set on `ctx`.
 */
export async function applyFault(ctx: Ctx, fault: Fault, flavor: ErrorFlavor): Promise<boolean> {
  const { req, res, draft } = ctx;
  draft.outcome.fault = fault.kind;
  const afterEvents = 'afterEvents' in fault ? Math.max(0, fault.afterEvents ?? 0) : 0;
  switch (fault.kind) {
    case 'status': {
      const extra: Record<string, string> = {};
      if (fault.retryAfterSeconds !== undefined) extra['retry-after'] = String(fault.retryAfterSeconds);
      sendError(res, flavor, fault.status, defaultMessage(fault.status), null, extra);
      return true;
    }
    case 'reset':
      req.socket.destroy();
      return true;
    case 'delay':
      await ctx.state.wait(fault.ms);
      return res.destroyed;
    case 'stream-error':
      ctx.streamFault = { afterEvents, mode: 'error' };
      return false;
    case 'reset-mid-stream':
      ctx.streamFault = { afterEvents, mode: 'reset' };
      return false;
    case 'malformed-sse':
      ctx.streamFault = { afterEvents, mode: 'garbage' };
      return false;
    case 'stall':
      if (fault.afterEvents === undefined) return stall(ctx, fault.ms, fault.headers === true).then(() => true);
      ctx.streamFault = { afterEvents, mode: 'stall', stallMs: fault.ms };
      return false;
    case 'malformed-json':
      draft.garbled = true;
      sendBrokenJson(res);
      return true;
    case 'wrong-body':
      sendWrongBody(res, fault.body);
      return true;
    case 'usage-missing':
      draft.usageMode = { kind: 'missing' };
      return false;
    case 'usage-inflated':
      draft.usageMode = { kind: 'inflated', factor: fault.factor ?? 1000 };
      return false;
  }
}

/** Sends nothing (or only the head) for `ms`, then destroys the socket: a vendor that hangs. */
async function stall(ctx: Ctx, ms: number, headers: boolean): Promise<void> {
  const { res } = ctx;
  if (headers) {
    res.writeHead(200, { 'content-type': isStreaming(ctx.body) ? 'text/event-stream; charset=utf-8' : 'application/json' });
    res.flushHeaders();
  }
  ctx.draft.cut = true;
  await ctx.state.wait(ms);
  res.socket?.destroy();
  res.destroy();
}
