// What one model call came to, filled in along the way by the door and the exchange (which vendor, which
// route, how many fallbacks, the usage and the charge) and read once when the answer is finished: by the
// call's log line and the metrics. Kept beside the request rather than threaded through every signature.
import type { FastifyRequest } from 'fastify';
import { requestSlot } from './request-slots.ts';

export interface CallFacts {
  door?: string;
  model?: string;
  vendor?: string;
  /** The route that answered, by name (`a0`, `a1`), never its URL (which may carry credentials). */
  route?: string | undefined;
  /** Routes that failed before the one that answered (or all that were tried, when none did). */
  failedRoutes: string[];
  /** The vendor whose routes refused the gateway's own credential (401/403), when that failed the call. */
  credentialRefused?: string;
  /** How many attempts failed before the answering one. */
  fallbackDepth?: number | undefined;
  tokensIn?: number;
  tokensOut?: number;
  /** What the wallet was charged, nano-USD. */
  chargedNano?: bigint;
  /** How far the cost of the usage the vendor reported passed the call's hold, nano-USD: its bounds did not hold. */
  aboveHoldNano?: bigint;
  /** The key's public prefix, never the secret. */
  keyPrefix?: string;
  /** When the caller was refused before anything was held: 402 (credits), 403 (plan/audience), 429 (quota). */
  refusedStatus?: number;
  /** process.hrtime.bigint() when the first byte went to the client, for streams. */
  firstByteAt?: bigint;
  /** The call's trace id, when telemetry is on: the log line joins the exported trace. */
  traceId?: string;
  /**
   * Resolved once the call is settled. A streamed answer ends before its charge is known, so the log line
   * waits for this rather than for the last byte.
   */
  settled: Promise<void>;
  /** The door calls it in its last `finally`, refused or settled alike. */
  markSettled: () => void;
}

const factsOf = requestSlot<CallFacts>('call_facts');

/** The request's call facts, created on first use: only model calls have them. */
export function callFacts(req: FastifyRequest): CallFacts {
  let facts = factsOf.get(req);
  if (!facts) {
    let markSettled = () => {};
    const settled = new Promise<void>((resolve) => (markSettled = resolve));
    facts = { failedRoutes: [], settled, markSettled };
    factsOf.set(req, facts);
  }
  return facts;
}

/** The facts when the request was a model call, else undefined. */
export function recordedCallFacts(req: FastifyRequest): CallFacts | undefined {
  return factsOf.get(req);
}
