// What vendor D's answers to the video worker mean: a job status read as an outcome of the job (status,
// error code, charge), the vendor's error message, the progress shown. Pure: no I/O beyond reading a body.

import type { UpstreamAnswer } from '../calls/upstream.ts';
import { usdToNano } from '../core/money.ts';
import type { VideoErrorCode } from './store.ts';

/** GET U/v1/videos/{request_id}, as far as the worker reads it. */
export type VendorStatus = {
  status?: unknown;
  progress?: unknown;
  video?: { url?: unknown; duration?: unknown };
  error?: { code?: unknown; message?: unknown };
  usage?: { cost_usd?: unknown };
};

/** How a job ends: what the job row shows and what is charged. */
export interface Outcome {
  status: 'completed' | 'failed';
  code?: VideoErrorCode;
  message?: string;
  costNano: bigint;
  usageSeconds?: number;
  file?: { name: string; bytes: number };
}

/**
 * A 2xx answer's JSON object (null when the body is not one, or broke before it was read whole), or the vendor's
 * message for any other status.
 */
export async function readVendorAnswer<T>(answer: UpstreamAnswer): Promise<{ ok: true; json: T | null } | { ok: false; message: string }> {
  const text = await answer.body.text().catch(() => '');
  if (answer.status < 200 || answer.status >= 300) return { ok: false, message: vendorMessage(text, answer.status) };
  return { ok: true, json: parseJson<T>(text) };
}

/** The vendor did not make the video: nothing is charged. */
export function vendorFailed(message: string): Outcome {
  return { status: 'failed', code: 'vendor_failed', message, costNano: 0n };
}

/** A job the vendor reports failed; a moderation block keeps its own code, and an input block may be charged. */
export function failureOf(s: VendorStatus): Outcome {
  const code = typeof s.error?.code === 'string' ? s.error.code : '';
  const message = typeof s.error?.message === 'string' ? s.error.message : '';
  if (code === 'input_moderated') {
    // The vendor may price a blocked input: that amount is charged and shown.
    return {
      status: 'failed',
      code: 'moderation_blocked',
      message: message || 'The input was blocked by the vendor safety check.',
      costNano: costOf(s),
    };
  }
  if (code === 'output_moderated') {
    return {
      status: 'failed',
      code: 'moderation_blocked',
      message: message || 'The generated video was filtered by the vendor safety check.',
      costNano: 0n,
    };
  }
  return vendorFailed(message || `The vendor could not produce the video${code ? ` (${code})` : ''}.`);
}

/**
 * What a delivered video is charged: the vendor's charge, or, when it names none it can read (missing, not a
 * positive number), the catalog's price for the seconds delivered, as held per second. A video the client can
 * download is never free, as usage a vendor left out elsewhere is estimated, not dropped.
 */
export function deliveredCost(s: VendorStatus, held: { nano: bigint; seconds: number }, seconds: number): bigint {
  const told = costOf(s);
  if (told > 0n || held.seconds <= 0) return told > 0n ? told : held.nano;
  // A delivered video is a second at least, whatever duration the vendor states.
  return (held.nano / BigInt(held.seconds)) * BigInt(Math.max(1, Math.min(seconds, held.seconds)));
}

/** The vendor's charge for the job, in nano-USD (0 when it names none). */
function costOf(s: VendorStatus): bigint {
  const c = s.usage?.cost_usd;
  if (typeof c !== 'number' || !Number.isFinite(c) || c <= 0) return 0n;
  try {
    return usdToNano(c);
  } catch {
    return BigInt(Math.ceil(c * 1e9)); // finer than a nano: rounded up, as usage is
  }
}

/** The vendor's progress as shown on a job that is not finished: a whole number from 0 to 99. */
export function clampProgress(v: unknown, fallback: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) return fallback;
  return Math.max(0, Math.min(99, Math.floor(v)));
}

function parseJson<T>(text: string): T | null {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as T) : null;
  } catch {
    return null;
  }
}

function vendorMessage(text: string, status: number): string {
  const j = parseJson<{ error?: { message?: unknown } | string; message?: unknown }>(text);
  const m = typeof j?.error === 'object' ? j.error?.message : (j?.error ?? j?.message);
  return typeof m === 'string' && m ? `${status} ${m}` : `status ${status}`;
}
