// The trace a video job belongs to, kept in this process between the request that made the job and the
// background work that submits and settles it, so those spans join the client's trace. A job finished by
// another process has no entry there; its settle span starts a trace of its own, found by the video id.
import type { CallTrace } from './call-trace.ts';

/** Entries kept at most: a bound on memory should jobs be finished elsewhere and never taken back here. */
const MAX_JOBS = 10_000;

export class JobTraces {
  private readonly traces = new Map<string, CallTrace>();

  remember(jobId: string, trace: CallTrace): void {
    if (this.traces.size >= MAX_JOBS) this.traces.delete(this.traces.keys().next().value!);
    this.traces.set(jobId, trace);
  }

  /** The job's trace, kept for the rest of its work. */
  of(jobId: string): CallTrace | null {
    return this.traces.get(jobId) ?? null;
  }

  /** The job's trace, forgotten: its work is over. */
  take(jobId: string): CallTrace | null {
    const trace = this.of(jobId);
    this.traces.delete(jobId);
    return trace;
  }
}
