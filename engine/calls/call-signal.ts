// What stops a call's work: its time limit, or its client leaving. An event emitter rather than an AbortSignal,
// because an AbortSignal handed to undici outlived its request through young collections
// (docs/decisions/per-call-garbage.md).
import { EventEmitter } from 'node:events';

export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  once(event: 'abort', listener: () => void): unknown;
  removeListener(event: 'abort', listener: () => void): unknown;
}

/** A CallSignal and the means to fire it; it fires once, and `reason` says why. */
export class CallAbort extends EventEmitter implements CallSignal {
  aborted = false;
  reason: unknown = undefined;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

/** Calls `listener` when `signal` fires (at once if it has); the returned function forgets it. */
export function onAbort(signal: CallSignal, listener: () => void): () => void {
  if (signal.aborted) {
    listener();
    return () => {};
  }
  signal.once('abort', listener);
  return () => signal.removeListener('abort', listener);
}
