// A finished video job's usage record, looked up by the video id (GET /v1/generations/{video id}).
import { emptyUsage } from '../core/types.ts';
import type { UsageRecordDraft } from '../usage/records.ts';
import type { VideoJob } from './store.ts';
import type { Outcome } from './vendor-answers.ts';

export function jobUsageRecord(job: VideoJob, o: Outcome, now: Date, traceId: string | null): UsageRecordDraft {
  return {
    requestId: job.id,
    walletId: job.walletId,
    keyId: job.keyId,
    at: now,
    door: 'videos',
    model: job.model,
    vendor: job.vendor,
    route: job.routeIndex === null ? null : `${job.vendor}${job.routeIndex}`,
    fallbackDepth: job.routeIndex ?? 0,
    usage: { ...emptyUsage(), video_seconds: o.usageSeconds ?? Number(job.seconds) },
    durationMs: now.getTime() - job.createdAt.getTime(),
    traceId,
    // A video is charged what the vendor stated (per second of the resolution, at its price).
    prices: { basis: 'vendor', vendor_nano: o.costNano.toString() },
  };
}
