// A finished job as the video.finished webhook event tells it: ids, model, outcome and cost; never the prompt.
import type { VideoJob } from './store.ts';
import type { Outcome } from './vendor-answers.ts';

export interface FinishedVideo {
  id: string;
  walletId: string;
  keyId: string;
  model: string;
  vendor: string;
  status: 'completed' | 'failed';
  seconds: string;
  size: string;
  errorCode: string | null;
  costNano: bigint;
  usageSeconds: number;
}

export function finishedVideo(job: VideoJob, o: Outcome, chargedNano: bigint): FinishedVideo {
  return {
    id: job.id,
    walletId: job.walletId,
    keyId: job.keyId,
    model: job.model,
    vendor: job.vendor,
    status: o.status,
    seconds: job.seconds,
    size: job.size,
    errorCode: o.code ?? null,
    costNano: o.costNano > 0n ? chargedNano : 0n,
    usageSeconds: o.usageSeconds ?? Number(job.seconds),
  };
}
