// A video job's background work in its trace: the settle of a job, under the request that made it when this
// process took that request, else as a trace of its own that names the job (gateway.video.id) and its model, so
// the charge is found either way.
import type { StepSpan } from '../telemetry/call-trace.ts';
import { chargeAttributes, GATEWAY, GENAI, operationOf } from '../telemetry/genai.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import type { VideoJob } from './store.ts';
import type { Outcome } from './vendor-answers.ts';

/** The settle span of a job's end, or null with telemetry off; the job's trace is forgotten here. */
export function jobSettleSpan(telemetry: Telemetry | null | undefined, job: VideoJob, o: Outcome): StepSpan | null {
  if (!telemetry) return null;
  const operation = operationOf({ kind: 'video' });
  const attrs = {
    [GATEWAY.videoId]: job.id,
    [GATEWAY.videoStatus]: o.status,
    [GATEWAY.videoSeconds]: o.usageSeconds ?? Number(job.seconds),
    [GATEWAY.walletId]: job.walletId,
    [GENAI.operation]: operation,
    [GENAI.provider]: job.vendor,
    [GENAI.requestModel]: job.model,
  };
  const request = telemetry.jobs.take(job.id);
  return request ? request.step('settle', attrs) : telemetry.rootSpan(`${operation} ${job.model}`, attrs);
}

/** Ends the settle span with what was charged, and the job's failure code when it failed. */
export function endJobSettleSpan(span: StepSpan | null, chargedNano: bigint, o: Outcome): void {
  span?.set(chargeAttributes(chargedNano)).end(o.status === 'failed' ? (o.code ?? 'failed') : undefined);
}
