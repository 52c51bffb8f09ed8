// A time limit as an abort signal whose timer goes when the work ends. AbortSignal.timeout's timer stays
// until it fires or the signal is garbage collected, and AbortSignal.any keeps weak references to its
// sources: per call, that is a timer, a signal and weak references that outlive the call by a full
// collection (2,000 of each in a heap taken under load), and 1.5% of the gateway's CPU.

export interface Deadline {
  readonly signal: AbortSignal;
  /** The time ran out (as opposed to `parent` aborting). */
  readonly passed: boolean;
  /** The work ended: the timer and the link to the parent go. */
  end(): void;
}

/** Aborts after `ms`, or when `parent` aborts (with its reason), whichever comes first. */
export function startDeadline(ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  let passed = false;
  const timer = setTimeout(() => {
    passed = true;
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, ms);
  timer.unref();
  const onParentAbort = () => controller.abort(parent!.reason);
  if (parent?.aborted) controller.abort(parent.reason);
  else parent?.addEventListener('abort', onParentAbort, { once: true });
  return {
    signal: controller.signal,
    get passed() {
      return passed;
    },
    end() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParentAbort);
    },
  };
}
