// The stream relay against a client socket that stops taking bytes: the vendor's stream is read no further
// than the client takes (back-pressure, so a stalled reader costs no memory), and once the client has left its
// buffer full for `stallMs` it is disconnected and the vendor's stream is read to its end for the usage.

import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { CallCharge } from '../../engine/calls/call-charge.ts';
import { CallAbort } from '../../engine/calls/call-signal.ts';
import { relayStream } from '../../engine/calls/stream-relay.ts';
import type { UpstreamAnswer } from '../../engine/calls/upstream.ts';
import type { StreamTranslator } from '../../engine/core/call.ts';
import { gatewayErrorBody } from '../../engine/core/errors.ts';
import { emptyUsage, type Usage } from '../../engine/core/types.ts';
import { preparedStream } from '../helpers/prepared-stream.ts';

const EVENTS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A vendor stream of EVENTS frames, counting how many the relay has pulled; the last one carries the usage. */
function vendorStream() {
  const counter = { pulled: 0 };
  async function* body() {
    for (let i = 0; i < EVENTS; i++) {
      counter.pulled++;
      yield Buffer.from(`data: {"i":${i}${i === EVENTS - 1 ? ',"usage":true' : ''}}\n\n`);
      await Promise.resolve();
    }
  }
  return { counter, answer: { status: 200, headers: {}, body: body() } as unknown as UpstreamAnswer };
}

/** A client socket whose buffer is full after the first write; `drains` says whether it ever empties. */
class FakeClient extends EventEmitter {
  writes = 0;
  writableLength = 0;
  destroyed = false;
  writableEnded = false;
  headersSent = false;
  constructor(private readonly drains: boolean) {
    super();
  }
  writeHead() {
    this.headersSent = true;
  }
  write(chunk: string): boolean {
    this.writes++;
    if (this.drains) {
      setImmediate(() => this.emit('drain'));
      return false;
    }
    this.writableLength += chunk.length;
    return false;
  }
  end() {
    this.writableEnded = true;
  }
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}

function setup(drains: boolean) {
  const raw = new FakeClient(drains);
  const reply = { raw, hijack: () => undefined } as unknown as FastifyReply;
  let lastUsage: Usage | undefined;
  const charge = { stores: () => undefined, record: (u: Usage) => (lastUsage = u), finish: async () => 0n } as unknown as CallCharge;
  const translator = (): StreamTranslator => {
    let sawUsage = false;
    return {
      push: (e) => {
        if (e.data.includes('"usage"')) sawUsage = true;
        return [`data: ${e.data}\n\n`];
      },
      end: () => ['data: [DONE]\n\n'],
      answerEnded: () => false,
      usage: () => ({ ...emptyUsage(), output_tokens: sawUsage ? 4242 : 1 }),
    };
  };
  const { prepared } = preparedStream(translator);
  const gone = new CallAbort();
  raw.on('close', () => gone.abort());
  const warnings: unknown[] = [];
  const vendor = vendorStream();
  const relay = (stallMs: number) =>
    relayStream(
      vendor.answer,
      {
        prepared,
        doorPath: '/v1/test',
        errorBody: gatewayErrorBody,
        reply,
        clientGone: gone,
        stallMs,
        openingHoldMs: 2_000,
        callEnds: new CallAbort(),
        headers: {},
        log: { warn: (o: unknown) => warnings.push(o) } as never,
      },
      charge,
    );
  return { raw, relay, vendor: vendor.counter, usage: () => lastUsage, warnings };
}

describe('stream relay and a client that stops reading', () => {
  it('stops reading the vendor while the client buffer is full, then disconnects it and reads on for the usage', async () => {
    const s = setup(false);
    const running = s.relay(300);
    await sleep(150);
    // Stalled: one frame written, the vendor read no further than the frame in hand.
    expect(s.raw.writes).toBe(1);
    expect(s.vendor.pulled).toBeLessThanOrEqual(2);
    expect(s.raw.destroyed).toBe(false);
    await running;
    // Past the stall limit: disconnected, nothing more written, and the vendor read to its end.
    expect(s.raw.destroyed).toBe(true);
    expect(s.raw.writes).toBe(1);
    expect(s.vendor.pulled).toBe(EVENTS);
  });

  it('settles a disconnected stalled client from the usage at the end of the vendor stream', async () => {
    const s = setup(false);
    await s.relay(100);
    expect(s.raw.destroyed).toBe(true);
    expect(s.usage()?.output_tokens).toBe(4242);
    expect(s.warnings).toHaveLength(1);
  });

  it('waits for a client that drains and sends it every frame', async () => {
    const s = setup(true);
    await s.relay(100);
    expect(s.raw.destroyed).toBe(false);
    expect(s.raw.writes).toBe(EVENTS + 1); // every event and [DONE]
    expect(s.usage()?.output_tokens).toBe(4242);
    expect(s.warnings).toHaveLength(0);
  });
});
