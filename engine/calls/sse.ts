// Reads server-sent events from an upstream body as they arrive (eventsource-parser does the
// framing), and writes frames for the client.
import { StringDecoder } from 'node:string_decoder';
import { createParser } from 'eventsource-parser';
import type { SseEvent } from '../core/call.ts';

/** Yields each event the moment its frame is complete; nothing is buffered beyond one frame. */
export async function* readSse(body: AsyncIterable<Buffer | string>): AsyncGenerator<SseEvent> {
  const ready: SseEvent[] = [];
  const parser = createParser({
    onEvent: (e) => {
      ready.push(e.event ? { event: e.event, data: e.data } : { data: e.data });
    },
  });
  const decoder = new StringDecoder('utf8');
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.write(chunk));
    while (ready.length) yield ready.shift()!;
  }
  parser.feed(decoder.end());
  parser.reset({ consume: true });
  while (ready.length) yield ready.shift()!;
}
