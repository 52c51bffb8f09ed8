// The video object clients see, and the signed short-lived download address (a file URL that works
// without the key, for a few minutes only).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { usdNumber } from '../core/money.ts';
import type { VideoJob } from './store.ts';

const unix = (d: Date | null) => (d === null ? null : Math.floor(d.getTime() / 1000));

/** USD from nano-USD, exact for every amount a vendor states to the nano. */

export function videoObject(job: VideoJob): Record<string, unknown> {
  const finished = job.status === 'completed' || job.status === 'failed';
  return {
    id: job.id,
    object: 'video',
    model: job.model,
    status: job.status,
    progress: job.progress,
    seconds: job.seconds,
    size: job.size,
    created_at: unix(job.createdAt),
    completed_at: unix(job.completedAt),
    expires_at: unix(job.expiresAt),
    error: job.status === 'failed' ? { code: job.errorCode, message: job.errorMessage ?? '' } : null,
    ...(finished
      ? {
          usage: {
            seconds: job.usageSeconds ?? Number(job.seconds),
            resolution: job.resolution,
            cost_usd: usdNumber(job.costNano ?? 0n),
          },
        }
      : {}),
  };
}

/** Whether the id still answers: not deleted and not past its retention. */
export function isVisible(job: VideoJob, now: Date): boolean {
  return job.deletedAt === null && (job.visibleUntil === null || job.visibleUntil.getTime() > now.getTime());
}

/** A token for /v1/videos/{id}/file: `<expiry unix seconds>.<HMAC-SHA256(id.expiry)>`. */
export function signFileToken(secret: string, id: string, expiresAtSec: number): string {
  return `${expiresAtSec}.${mac(secret, id, expiresAtSec)}`;
}

export function verifyFileToken(secret: string, id: string, token: string, nowSec: number): boolean {
  const m = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return false;
  const exp = Number(m[1]);
  if (exp < nowSec) return false;
  const want = Buffer.from(mac(secret, id, exp));
  const got = Buffer.from(m[2]!);
  return want.length === got.length && timingSafeEqual(want, got);
}

const mac = (secret: string, id: string, exp: number) => createHmac('sha256', secret).update(`${id}.${exp}`).digest('base64url');
