// A stream's end marker waits for the call's charge: every frame before it reaches the client as it arrives,
// the marker (and anything after it) only once the charge is committed. A vendor stream that ends with nothing
// for the client is still a failed route, asked of the next one, marker held or not.

import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { CallCharge } from '../../engine/calls/call-charge.ts';
import { CallAbort } from '../../engine/calls/call-signal.ts';
import { relayStream } from '../../engine/calls/stream-relay.ts';
import type { UpstreamAnswer } from '../../engine/calls/upstream.ts';
import type { SseEvent, StreamTranslator } from '../../engine/core/call.ts';
import { gatewayErrorBody } from '../../engine/core/errors.ts';
import { emptyUsage } from '../../engine/core/types.ts';
import { preparedStream } from '../helpers/prepared-stream.ts';

class Client extends EventEmitter {
  readonly written: string[] = [];
  destroyed = false;
  writableEnded = false;
  headersSent = false;
  writeHead() {
    this.headersSent = true;
  }
  write(chunk: string): boolean {
    this.written.push(chunk);
    return true;
  }
  end() {
    this.writableEnded = true;
  }
}

const answerOf = (frames: string[]) =>
  ({
    status: 200,
    headers: {},
    body: (async function* () {
      for (const f of frames) yield Buffer.from(f);
    })(),
  }) as unknown as UpstreamAnswer;

/** Relays `frames`; the translator says the answer ended at an event whose data is `END`. */
async function relay(frames: string[], commitMs: number) {
  const client = new Client();
  const timeline: string[] = [];
  const charge = {
    stores: () => undefined,
    record: () => undefined,
    finish: async () => {
      timeline.push(`charge asked after ${client.written.length} writes`);
      await new Promise((r) => setTimeout(r, commitMs));
      timeline.push('charge committed');
      return 0n;
    },
  } as unknown as CallCharge;
  const translator = (): StreamTranslator => {
    let ended = false;
    return {
      push: (e: SseEvent) => {
        if (e.data === 'END') ended = true;
        return [`data: ${e.data}\n\n`];
      },
      end: () => [],
      answerEnded: () => ended,
      usage: () => emptyUsage(),
    };
  };
  const { prepared } = preparedStream(translator);
  const reply = { raw: client, hijack: () => undefined } as unknown as FastifyReply;
  const origWrite = client.write.bind(client);
  client.write = (chunk: string) => {
    timeline.push(`wrote ${chunk.trim()}`);
    return origWrite(chunk);
  };
  const step = await relayStream(
    answerOf(frames),
    {
      prepared,
      doorPath: '/v1/test',
      errorBody: gatewayErrorBody,
      reply,
      clientGone: new CallAbort(),
      stallMs: 1_000,
      openingHoldMs: 2_000,
      callEnds: new CallAbort(),
      headers: {},
      log: { warn: () => undefined } as never,
    },
    charge,
  );
  return { step, timeline, client };
}

describe('the end of a stream and its charge', () => {
  it('sends every frame before the end marker at once, and the marker only once the charge is committed', async () => {
    const { step, timeline, client } = await relay(['data: one\n\n', 'data: two\n\n', 'data: END\n\n'], 30);
    expect(step.done).toBe(true);
    expect(timeline).toEqual(['wrote data: one', 'wrote data: two', 'charge asked after 2 writes', 'charge committed', 'wrote data: END']);
    expect(client.writableEnded).toBe(true);
  });

  it('asks the next route when the vendor stream ends with nothing for the client', async () => {
    const { step, client } = await relay([], 0);
    expect(step.done).toBe(false);
    expect(client.written).toEqual([]);
  });
});
