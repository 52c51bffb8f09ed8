// A time limit as a call signal whose timer goes when the work ends, unlike AbortSignal.timeout and
// AbortSignal.any, which outlive the call (docs/decisions/per-call-garbage.md).
import { CallAbort, type CallSignal, onAbort } from './call-signal.ts';

interface Deadline {
  readonly signal: CallSignal;
  /** The time ran out (as opposed to `parent` aborting). */
  readonly passed: boolean;
  /** The work ended: the timer and the link to the parent go. */
  end(): void;
}

/** Aborts after `ms`, or when `parent` aborts (with its reason), whichever comes first. */
export function startDeadline(ms: number, parent?: CallSignal): Deadline {
  const abort = new CallAbort();
  let passed = false;
  // The abort waits for the I/O already arrived: on a busy process a due timer runs before the sockets are read,
  // and a vendor's answer that came in time would be thrown away unread (and its work left uncharged).
  let late: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    late = setImmediate(() => {
      passed = true;
      abort.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    });
  }, ms);
  timer.unref();
  const forgetParent = parent ? onAbort(parent, () => abort.abort(parent.reason)) : undefined;
  return {
    signal: abort,
    get passed() {
      return passed;
    },
    end() {
      clearTimeout(timer);
      if (late) clearImmediate(late);
      forgetParent?.();
    },
  };
}
