// One call's trip to the vendor and back: the route loop with fallback, the answer or stream
// translation, and settlement from usage in a `finally`, so no path leaves money held or uncharged.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { Accounts, Caller, Hold } from './accounts.ts';
import type { Call, StreamTranslator } from './call.ts';
import type { DoorConfig, VendorConfig } from './config.ts';
import { errors, GatewayError, renderError, type ErrorShape } from './errors.ts';
import type { PreparedCall, TransformRegistry } from './prepare.ts';
import { readSse } from './sse.ts';
import { emptyUsage, type JsonObject, type Usage } from './types.ts';
import { isRetryableStatus, RouteFailure, type UpstreamAnswer, type UpstreamClient, type UpstreamRequest } from './upstream.ts';
import type { Route } from './vendor-routes.ts';

export const FALLBACK_DEPTH_HEADER = 'x-gateway-fallback-depth';

export interface ExchangeDeps {
  upstream: UpstreamClient;
  registry: TransformRegistry;
  accounts: Accounts;
  log: FastifyBaseLogger;
  /** The cost of the usage in nano-USD, at the catalog's prices. */
  costOf: (call: Call, usage: Usage) => bigint;
}

export interface ExchangeInput {
  prepared: PreparedCall;
  door: DoorConfig;
  vendor: VendorConfig;
  routes: Route[];
  caller: Caller;
  hold: Hold | null;
  clientHeaders: Record<string, string | string[] | undefined>;
  timeoutMs: number;
  reply: FastifyReply;
}

/** Runs the call; answers the client itself (including errors after the hold was taken). */
export async function exchange(input: ExchangeInput, deps: ExchangeDeps): Promise<void> {
  const { reply, prepared } = input;
  const clientGone = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) clientGone.abort();
  });
  const signal = AbortSignal.any([clientGone.signal, AbortSignal.timeout(input.timeoutMs)]);
  const request = upstreamRequest(input);
  const settlement = new Settlement(input, deps);
  try {
    for (const route of input.routes) {
      const depth = route.index;
      let answer: UpstreamAnswer;
      try {
        answer = await deps.upstream.send(route, input.vendor, request, signal);
      } catch (e) {
        if (e instanceof RouteFailure) {
          deps.log.warn({ vendor: route.vendor, route: route.index, reason: e.message }, 'route failed, trying the next');
          continue;
        }
        throw e;
      }
      if (isRetryableStatus(answer.status)) {
        deps.log.warn({ vendor: route.vendor, route: route.index, status: answer.status }, 'route answered retryable status');
        await answer.body.dump().catch(() => undefined);
        continue;
      }
      if (answer.status >= 400) {
        await relayVendorError(answer, depth, input);
        return;
      }
      try {
        const done = prepared.call.stream
          ? await relayStream(answer, depth, input, deps, settlement)
          : await relayAnswer(answer, depth, input, deps, settlement);
        if (done) return;
      } catch (e) {
        if (e instanceof RouteFailure && !reply.raw.headersSent) {
          deps.log.warn({ vendor: route.vendor, route: route.index, reason: e.message }, 'route answered badly, trying the next');
          continue;
        }
        throw e;
      }
    }
    throw errors.upstream(
      input.routes.length === 0
        ? `No route is configured for vendor ${prepared.call.model.vendor}.`
        : `Vendor ${prepared.call.model.vendor.toUpperCase()} failed on every route (${input.routes.length}). Retry later.`,
    );
  } catch (e) {
    if (signal.aborted && !clientGone.signal.aborted && !reply.raw.headersSent) {
      sendError(reply, errors.upstream(`The vendor did not answer within ${Math.round(input.timeoutMs / 1000)} seconds.`), input.door.errors);
    } else if (!reply.raw.headersSent && !clientGone.signal.aborted) {
      sendError(reply, e instanceof GatewayError ? e : errors.upstream((e as Error).message), input.door.errors);
    } else if (!reply.raw.writableEnded) {
      reply.raw.end();
    }
  } finally {
    await settlement.finish();
  }
}

function upstreamRequest(input: ExchangeInput): UpstreamRequest {
  const headers: Record<string, string> = { ...input.prepared.call.upstreamHeaders };
  for (const name of input.vendor.forward_headers) {
    const v = input.clientHeaders[name];
    if (typeof v === 'string') headers[name] = v;
  }
  return {
    path: input.prepared.protocol.upstream,
    body: JSON.stringify(input.prepared.call.body),
    contentType: 'application/json',
    headers,
  };
}

/** Charges once: the usage of the answer that reached the client, or releases the hold. */
class Settlement {
  private usage: Usage | null = null;
  private settled = false;

  constructor(
    private readonly input: ExchangeInput,
    private readonly deps: ExchangeDeps,
  ) {}

  record(usage: Usage): void {
    this.usage = usage;
  }

  async finish(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    const { hold, caller } = this.input;
    if (!hold) return;
    try {
      if (this.usage) await this.deps.accounts.settle(caller, hold, this.deps.costOf(this.input.prepared.call, this.usage));
      else await this.deps.accounts.release(hold);
    } catch (e) {
      // The sweeper releases an unsettled hold after its expiry; log loudly so it is seen.
      this.deps.log.error({ err: e, callId: hold.callId }, 'settlement failed');
    }
  }
}

async function relayAnswer(
  answer: UpstreamAnswer,
  depth: number,
  input: ExchangeInput,
  deps: ExchangeDeps,
  settlement: Settlement,
): Promise<boolean> {
  const { protocol, call } = input.prepared;
  const raw = await answer.body.text();
  let json: JsonObject;
  try {
    json = JSON.parse(raw) as JsonObject;
  } catch {
    throw new RouteFailure('the vendor answered with a body that is not JSON', answer.status);
  }
  const usage = protocol.usage ? deps.registry.usageReaders[protocol.usage](json) : emptyUsage();
  settlement.record(usage);
  const out = protocol.answer ? deps.registry.answerTransforms[protocol.answer](json, call) : json;
  await settlement.finish();
  input.reply.header(FALLBACK_DEPTH_HEADER, String(depth)).code(200).send(out);
  return true;
}

/** Streams frames as they arrive. Falls back to the next route only while nothing reached the client. */
async function relayStream(
  answer: UpstreamAnswer,
  depth: number,
  input: ExchangeInput,
  deps: ExchangeDeps,
  settlement: Settlement,
): Promise<boolean> {
  const { protocol, call } = input.prepared;
  const factory = protocol.stream ? deps.registry.streamTranslators[protocol.stream] : undefined;
  if (!factory) throw errors.unavailable(`No stream translator is configured for ${input.door.path}.`);
  const translator: StreamTranslator = factory(call);
  const res = input.reply.raw;
  let started = false;
  const write = (frames: string[]) => {
    if (frames.length === 0) return;
    if (!started) {
      input.reply.hijack();
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        [FALLBACK_DEPTH_HEADER]: String(depth),
      });
      started = true;
    }
    res.write(frames.join(''));
  };
  try {
    for await (const event of readSse(answer.body)) {
      if (!started && isErrorEvent(event.event, event.data)) {
        throw new RouteFailure(`vendor stream opened with an error event: ${event.data.slice(0, 200)}`);
      }
      write(translator.push(event));
      if (started) settlement.record(translator.usage());
    }
    write(translator.end());
    if (started) settlement.record(translator.usage());
  } catch (e) {
    if (!started) {
      if (e instanceof RouteFailure || !(e instanceof GatewayError)) {
        deps.log.warn({ reason: (e as Error).message }, 'stream failed before the first byte, trying the next route');
        return false;
      }
      throw e;
    }
    // Bytes already reached the client: charge what was produced and end the stream.
    settlement.record(translator.usage());
    deps.log.warn({ reason: (e as Error).message }, 'stream ended early');
  } finally {
    if (started && !res.writableEnded) res.end();
  }
  return true;
}

function isErrorEvent(name: string | undefined, data: string): boolean {
  if (name === 'error' || name === 'response.failed') return true;
  if (!data.startsWith('{"error"')) return false;
  try {
    const parsed = JSON.parse(data) as Record<string, unknown>;
    return typeof parsed.error === 'object' && parsed.error !== null && !('choices' in parsed);
  } catch {
    return false;
  }
}

/**
 * A vendor's 4xx is the client's answer: unchanged when the shapes match, re-shaped otherwise. The depth header
 * names the route that answered (a 400 from the second route after a 429 on the first is depth 1).
 */
async function relayVendorError(answer: UpstreamAnswer, depth: number, input: ExchangeInput): Promise<void> {
  const raw = await answer.body.text();
  const vendorShape: ErrorShape = input.prepared.protocol.errors ?? 'chat';
  const reply = input.reply.header(FALLBACK_DEPTH_HEADER, String(depth));
  if (vendorShape === input.door.errors) {
    reply.code(answer.status).header('content-type', answer.headers['content-type'] ?? 'application/json').send(raw);
    return;
  }
  const { type, message } = parseVendorError(raw);
  const err = new GatewayError(answer.status, (type ?? 'invalid_request_error') as GatewayError['type'], message ?? raw.slice(0, 500));
  sendError(reply, err, input.door.errors);
}

function parseVendorError(raw: string): { type?: string; message?: string } {
  try {
    const body = JSON.parse(raw) as { error?: { type?: string; message?: string } };
    return { type: body.error?.type, message: body.error?.message };
  } catch {
    return {};
  }
}

export function sendError(reply: FastifyReply, err: GatewayError, shape: ErrorShape): void {
  const rendered = renderError(err, shape);
  reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}
