// The faults a test can queue on a simulator route (`inject(route, fault)`; simulator/README.md, Faults), and
// which requests each applies to.
import type { ServerResponse } from 'node:http';

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

/** Stream kinds (and a mid-stream stall) wait for a streaming request; malformed JSON for a plain one. */
export function appliesTo(fault: Fault, streaming: boolean): boolean {
  if (STREAM_ONLY.has(fault.kind) || (fault.kind === 'stall' && fault.afterEvents !== undefined)) return streaming;
  if (fault.kind === 'malformed-json' || fault.kind === 'wrong-body') return !streaming;
  return true;
}

/** A 200 that claims JSON and breaks off inside it, as a proxy that cut the answer would deliver. */
export function sendBrokenJson(res: ServerResponse): void {
  const text =
    '{"id":"broken_sim","object":"chat.completion","type":"message","choices":[{"index":0,"message":{"role":"assistant","content":"Simulated rep';
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A 200 of well-formed JSON in another shape than the path answers, as a vendor that mixed up its endpoints would. */
export function sendWrongBody(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
