// A vendor's stream, relayed frame by frame to the client and read to its end whether or not the client
// stays. The vendor bills the whole generation either way, so a client that leaves early must pay what
// staying would have cost: once it is gone the frames are dropped (nothing is buffered for it) and only
// the usage is kept, which the vendor reports in the stream's last events. Only a stream the vendor itself
// breaks (reset, error event, the call's time limit) is settled from the translator's estimate.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { StreamTranslator } from '../core/call.ts';
import { errors, GatewayError } from '../core/errors.ts';
import type { PreparedCall, TransformRegistry } from './prepare.ts';
import type { RouteStep } from './route-loop.ts';
import type { Settlement } from './settlement.ts';
import { readSse } from './sse.ts';
import { RouteFailure, type UpstreamAnswer } from './upstream.ts';

export interface StreamRelay {
  prepared: PreparedCall;
  /** The door's path, for the message when no translator is configured. */
  doorPath: string;
  reply: FastifyReply;
  /** Aborted once the client has closed its connection. */
  clientGone: AbortSignal;
  /** Headers of the client's response (which route answered). */
  headers: Record<string, string>;
  registry: TransformRegistry;
  log: Pick<FastifyBaseLogger, 'warn'>;
}

/** Streams frames as they arrive. Falls back to the next route only while the vendor produced nothing. */
export async function relayStream(answer: UpstreamAnswer, relay: StreamRelay, settlement: Settlement): Promise<RouteStep<void>> {
  const { protocol, call } = relay.prepared;
  const factory = protocol.stream ? relay.registry.streamTranslators[protocol.stream] : undefined;
  if (!factory) throw errors.unavailable(`No stream translator is configured for ${relay.doorPath}.`);
  const translator: StreamTranslator = factory(call);
  const client = new ClientStream(relay.reply, relay.headers, relay.clientGone);
  let produced = false;
  const pass = (frames: string[]) => {
    if (frames.length === 0) return;
    produced = true;
    client.write(frames);
  };
  try {
    for await (const event of readSse(answer.body)) {
      if (!produced && isErrorEvent(event.event, event.data)) {
        throw new RouteFailure(`vendor stream opened with an error event: ${event.data.slice(0, 200)}`);
      }
      pass(translator.push(event));
    }
    pass(translator.end());
    if (!produced) throw new RouteFailure('the vendor stream ended without an event');
    settlement.record(translator.usage());
  } catch (e) {
    if (!produced) {
      if (e instanceof RouteFailure || !(e instanceof GatewayError)) return { done: false, problem: `stream failed before the first byte: ${(e as Error).message}` };
      throw e;
    }
    // The vendor broke the stream after producing output: settle from what was produced and end the stream.
    settlement.record(translator.usage());
    relay.log.warn({ reason: (e as Error).message }, 'stream ended early');
  } finally {
    if (produced || relay.clientGone.aborted) client.close();
  }
  return { done: true, value: undefined };
}

/**
 * The client's side of the stream: opened with the first frame, written while the client is there. Frames
 * for a client that has left are dropped on the spot, so reading on costs no memory.
 */
class ClientStream {
  private opened = false;

  constructor(
    private readonly reply: FastifyReply,
    private readonly headers: Record<string, string>,
    private readonly gone: AbortSignal,
  ) {}

  private get closed(): boolean {
    const res = this.reply.raw;
    return this.gone.aborted || res.destroyed || res.writableEnded;
  }

  write(frames: string[]): void {
    if (this.closed) return;
    const res = this.reply.raw;
    if (!this.opened) {
      this.reply.hijack();
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        ...this.headers,
      });
      this.opened = true;
    }
    res.write(frames.join(''));
  }

  /** Ends the response; a client gone before the first frame gets nothing more, and the reply is not sent later. */
  close(): void {
    if (!this.opened) this.reply.hijack();
    if (!this.reply.raw.writableEnded) this.reply.raw.end();
  }
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
