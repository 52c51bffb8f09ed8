// Audio and other bytes, relayed as they come but for the last chunk, which waits for the call's charge: audio a
// client received in full was charged, and a vendor that fails before any byte reached the client (the next route
// may answer) or breaks off half-way (the client's audio is cut) costs nothing. A client that leaves pays what staying would have.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { Usage } from '../core/types.ts';
import type { CallCharge } from './call-charge.ts';
import type { CallSignal } from './call-signal.ts';
import { ClientStream } from './client-stream.ts';
import type { RouteStep } from './route-loop.ts';
import { answerHeader, RouteFailure, type UpstreamAnswer } from './upstream.ts';

interface BinaryRelay {
  reply: FastifyReply;
  /** Headers of the client's response: which route answered, and what the call is charged (its cost is fixed). */
  headers: Record<string, string>;
  /** The call's usage, fixed before it was made (speech: its characters). */
  usage: Usage;
  stallMs: number;
  clientGone: CallSignal;
  log: Pick<FastifyBaseLogger, 'warn'>;
}

/**
 * The bytes a binary door answers say they are media or raw bytes; any other body under a 200 (JSON, text, a stream
 * of JSON lines) is the vendor's error, not the answer.
 */
const BYTES = /^\s*(audio|video|image)\/|^\s*application\/octet-stream\b/i;

export async function relayBinary(answer: UpstreamAnswer, relay: BinaryRelay, charge: CallCharge): Promise<RouteStep<void>> {
  const type = answerHeader(answer, 'content-type') ?? 'application/octet-stream';
  if (!BYTES.test(type)) throw new RouteFailure(`the vendor answered ${type.split(';')[0]} where bytes were due`, answer.status);
  const chunks = (answer.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let held = await firstChunk(chunks, answer.status);
  const client = new ClientStream(relay.reply, { ...relay.headers, 'content-type': type }, relay.clientGone, relay.stallMs, relay.log);
  let sent = false;
  try {
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      await client.writeBytes(held);
      sent = true;
      held = next.value;
    }
  } catch (e) {
    if (!sent)
      throw new RouteFailure(`the vendor's bytes broke off before any reached the client (${(e as Error).message})`, answer.status);
    relay.log.warn({ reason: (e as Error).message }, 'the vendor broke off its bytes: the answer is cut and not charged');
    client.abort();
    return { done: true, value: undefined };
  }
  charge.record(relay.usage);
  await charge.finish();
  await client.writeBytes(held);
  client.close();
  return { done: true, value: undefined };
}

/** The first bytes, before anything goes to the client: none, or a body that breaks first, leaves the next route to answer. */
async function firstChunk(chunks: AsyncIterator<Buffer>, status: number): Promise<Buffer> {
  let first: IteratorResult<Buffer>;
  try {
    first = await chunks.next();
    while (!first.done && first.value.length === 0) first = await chunks.next();
  } catch (e) {
    throw new RouteFailure(`the vendor's answer broke off before its first byte (${(e as Error).message})`, status);
  }
  if (first.done) throw new RouteFailure('the vendor answered with no bytes', status);
  return first.value;
}
