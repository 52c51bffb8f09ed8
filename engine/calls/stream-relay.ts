// A vendor's stream is read to its end whether or not the client stays, because the vendor bills the whole
// generation either way: a client that leaves pays what staying would have cost. A reader that stops reading gets
// back-pressure, so it costs no memory, and past `stallMs` it counts as gone.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { tryParse } from '../../transforms/util/json.ts';
import { eventFrame } from '../../transforms/util/sse.ts';
import type { SseEvent, StreamTranslator } from '../core/call.ts';
import { type ErrorBody, errors, GatewayError } from '../core/errors.ts';
import type { StoredAnswer } from '../core/protocol.ts';
import type { CallTrace } from '../telemetry/call-trace.ts';
import type { CallCharge } from './call-charge.ts';
import type { CallSignal } from './call-signal.ts';
import { ClientStream } from './client-stream.ts';
import type { PreparedCall } from './prepare.ts';
import type { RouteStep } from './route-loop.ts';
import { readSse } from './sse.ts';
import { RouteFailure, type UpstreamAnswer } from './upstream.ts';

interface StreamRelay {
  prepared: PreparedCall;
  /** The door's path, for the message when no translator is configured. */
  doorPath: string;
  reply: FastifyReply;
  /** Aborted once the client has closed its connection. */
  clientGone: CallSignal;
  /** How long the client's buffer may stay full before the client is treated as gone. */
  stallMs: number;
  /** How long the stream's opening events may wait for its first content (OpeningHold). */
  openingHoldMs: number;
  /** Aborted once the call's time limit has passed: then no other route can be asked. */
  callEnds: CallSignal;
  /** Headers of the client's response (which route answered). */
  headers: Record<string, string>;
  /** The body the door's clients read an error in: a stream the vendor broke off ends with it. */
  errorBody: ErrorBody;
  log: Pick<FastifyBaseLogger, 'warn'>;
  /** Told when the first frame goes to the client (time to first byte). */
  onFirstByte?: () => void;
  /** The call's trace, when telemetry is on: it reads the answer's id, model and finish reasons off the events. */
  trace?: CallTrace | null | undefined;
}

/**
 * Streams frames as they arrive, but the stream's opening events and the answer's end marker: the opening waits
 * for the first content (for at most `openingHoldMs`, OpeningHold), and the end marker with what follows it for
 * the call's charge (charge.finish), so a client that received the whole answer was charged for it. Falls back
 * to the next route only while nothing reached the client.
 */
export async function relayStream(answer: UpstreamAnswer, relay: StreamRelay, charge: CallCharge): Promise<RouteStep<void>> {
  const { protocol, call } = relay.prepared;
  const factory = protocol.stream?.run;
  if (!factory) throw errors.unavailable(`No stream translator is configured for ${relay.doorPath}.`);
  const translator: StreamTranslator = factory(call);
  const { stored, isStreamError = () => false, isStreamOpening = () => false } = relay.prepared.wire;
  const client = new ClientStream(relay.reply, relay.headers, relay.clientGone, relay.stallMs, relay.log);
  const opening = new OpeningHold(relay.openingHoldMs, isStreamOpening);
  let produced = false;
  /** The end marker and every frame after it, held for the charge. */
  let held: string[] | null = null;
  /** What this route's stream says the vendor stored; the charge is told once this route answers the call. */
  let storedAnswer: StoredAnswer | null = null;
  const pass = async (frames: string[]) => {
    if (frames.length === 0) return;
    if (!produced) relay.onFirstByte?.();
    produced = true;
    await client.write(frames);
  };
  const hold = (frames: string[]) => {
    held ??= [];
    held.push(...frames);
  };
  /** Whether the vendor produced anything for the client, sent or held: past that, no other route is asked. */
  const producedAny = () => produced || (held !== null && held.length > 0);
  const events = readSse(answer.body)[Symbol.asyncIterator]();
  let next: Promise<IteratorResult<SseEvent>> | null = null;
  let ended = false; // by the vendor's end of stream, or by the call's deadline aborting the read
  try {
    while (!ended) {
      next ??= events.next();
      const read = await opening.race(next);
      if (read === 'late') {
        await pass(opening.end() ?? []);
        continue;
      }
      next = null;
      ended = read.done === true;
      if (read.done) continue;
      const event = read.value;
      if (!producedAny() && isStreamError(event)) {
        throw new RouteFailure(`vendor stream failed before any content: ${event.data.slice(0, 200)}`);
      }
      relay.trace?.streamEvent(event.data);
      if (stored?.mayName(event)) storedAnswer = laterWord(storedAnswer, stored.answerOf(tryParse(event.data)));
      const pushed = translator.push(event);
      if (opening.keeps(event, pushed)) continue;
      const kept = opening.end();
      const frames = kept ? kept.concat(pushed) : pushed;
      if (held || translator.answerEnded()) hold(frames);
      else await pass(frames);
    }
    hold((opening.end() ?? []).concat(translator.end()));
    if (!producedAny()) throw new RouteFailure('the vendor stream ended without an event');
  } catch (e) {
    // Out of time, no other route can answer instead: an opening the vendor sent is its work, charged as the rest.
    const kept = opening.end();
    if (kept && relay.callEnds.aborted) hold(kept);
    if (next === null) await events.return(undefined).catch(() => undefined); // the vendor's body, let go
    if (!producedAny()) {
      if (e instanceof RouteFailure || !(e instanceof GatewayError))
        return { done: false, problem: `stream failed before the first byte: ${(e as Error).message}` };
      throw e;
    }
    // The vendor broke the stream after producing output: settle from what was produced and end the stream.
    relay.log.warn({ reason: (e as Error).message }, 'stream ended early');
    if (!translator.answerEnded()) hold([brokenOff(relay.errorBody)]);
  }
  try {
    charge.stores(storedAnswer);
    charge.record(translator.usage());
    await charge.finish();
    if (held) await pass(held);
  } finally {
    if (produced || relay.clientGone.aborted) client.close();
  }
  return { done: true, value: undefined };
}

/** A stored answer as a stream tells it over several events: its id from the first word of it, its items from the last. */
function laterWord(told: StoredAnswer | null, word: StoredAnswer | null): StoredAnswer | null {
  if (!word) return told;
  return { id: told?.id ?? word.id, items: word.items.length > 0 ? word.items : (told?.items ?? []) };
}

/**
 * The frames of a stream's opening events, kept from the client until the first content or until `holdMs` has
 * passed: an error in that time still moves the call to the next route, since the client has seen nothing. A
 * model that thinks before it writes gets its opening sent once the time is up, so its client sees it begin.
 */
class OpeningHold {
  private frames: string[] | null;
  private late: Promise<'late'> | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly holdMs: number,
    private readonly isOpening: (event: SseEvent) => boolean,
  ) {
    this.frames = holdMs > 0 ? [] : null;
  }

  /** Keeps the event's frames when the opening is still on and the event is one of it. */
  keeps(event: SseEvent, frames: string[]): boolean {
    if (this.frames === null || !this.isOpening(event)) return false;
    this.frames.push(...frames);
    this.late ??= new Promise((resolve) => {
      this.timer = setTimeout(resolve, this.holdMs, 'late');
    });
    return true;
  }

  /** The next read, or 'late' when the time runs out first while frames are kept (the read stays pending). */
  race(read: Promise<IteratorResult<SseEvent>>): Promise<IteratorResult<SseEvent> | 'late'> {
    return this.late && this.frames !== null && this.frames.length > 0 ? Promise.race([read, this.late]) : read;
  }

  /** Ends the opening: the frames it kept (null when none), to go before whatever comes next. */
  end(): string[] | null {
    const kept = this.frames;
    if (kept === null) return null;
    this.frames = null;
    clearTimeout(this.timer);
    return kept.length > 0 ? kept : null;
  }
}

/**
 * The frame that tells the client the answer it read is incomplete, in its door's error body: without it a client
 * of a stream cut off before its end marker takes the part it read for the whole answer (the OpenAI SDK does).
 */
function brokenOff(body: ErrorBody): string {
  const err = errors.upstream(
    'The vendor broke off the stream before the answer ended; it is incomplete, and charged for what the vendor produced.',
  );
  return eventFrame(body.streamEvent, JSON.stringify(body.write(err)));
}
