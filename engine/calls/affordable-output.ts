// A text call with no output limit is held for the model's whole output; when that is more than the caller can
// hold, the vendor is sent the largest limit that fits instead of refusing a call that most likely never needed it
// (said in `x-service-max-tokens`). A limit the client sent is never touched.
import type { DoorConfig } from '../catalog/config.ts';
import type { Snapshot } from '../catalog/runtime.ts';
import { clientLimits, honouredLimits } from '../catalog/wire-format.ts';
import type { Call } from '../core/call.ts';
import { type HoldQuote, holdFor } from './hold-size.ts';

/** The response header naming the output limit the gateway wrote for the client. */
export const MAX_TOKENS_HEADER = 'x-service-max-tokens';

/** What to hold, and the output limit written into the vendor's body to make it fit (absent: the body as it was). */
export interface FittedQuote extends HoldQuote {
  written?: { field: string; value: number };
}

/** Not even the shortest answer (one output token) fits what the caller can hold: what it needs, and what there is. */
export interface NothingFits {
  nothingFits: { neededNano: bigint; availableNano: bigint };
}

/** The output limit field the gateway writes for this call, and the model's whole output; null: none to lower. */
function outputLimitOf(door: DoorConfig, call: Call, snap: Snapshot): { fields: readonly string[]; field: string; most: number } | null {
  if (door.billing !== 'tokens') return null;
  const fields = honouredLimits(door, call.model.vendor).output ?? [];
  // The field the chain caps for this vendor (a vendor that ignores the others), else the wire format's first.
  const capped = snap.config.billing.reservation.output_cap_written?.[call.model.vendor];
  const field = capped && fields.includes(capped) ? capped : fields[0];
  const most = call.model.max_output ?? 0;
  return field && most >= 1 ? { fields, field, most } : null;
}

/**
 * The call's quote lowered to `room`, for a call refused for its default output: null when the client sent an
 * output limit that is not the trouble, `nothingFits` when not even one output token fits (then no output limit
 * helps, sent or not). Rewrites `call.body`'s output limit when it lowers it.
 */
export async function lowerOutputToRoom(
  door: DoorConfig,
  call: Call,
  snap: Snapshot,
  at: Date,
  room: () => Promise<bigint>,
): Promise<FittedQuote | NothingFits | null> {
  const limit = outputLimitOf(door, call, snap);
  if (!limit) return null;
  const { fields, field, most } = limit;
  const available = await room();

  const quoteAt = (n: number): HoldQuote => holdFor(door, { ...call, body: withOutputLimit(call.body, fields, field, n) }, snap, at);
  const smallest = quoteAt(1).amount;
  if (smallest > available) return { nothingFits: { neededNano: smallest, availableNano: available } };
  if (clientSentOutputLimit(door, call)) return null; // a limit the client sent is held as sent: its refusal stands
  // The hold grows with the output limit: the largest that fits, by halving.
  let fits = 1;
  let over = most + 1;
  while (over - fits > 1) {
    const mid = Math.floor((fits + over) / 2);
    if (quoteAt(mid).amount <= available) fits = mid;
    else over = mid;
  }
  if (fits >= most) return null;
  return writeOutputLimit(door, call, snap, at, limit, fits);
}

/**
 * The call's default output lowered to its shortest answer (one token), for a day that is not yet used up but fits no
 * answer: the day's last call passes, its overshoot kept to its input (interface.md, Authentication 8).
 */
export function shortestAnswer(door: DoorConfig, call: Call, snap: Snapshot, at: Date): FittedQuote | null {
  const limit = outputLimitOf(door, call, snap);
  return limit ? writeOutputLimit(door, call, snap, at, limit, 1) : null;
}

type OutputLimit = NonNullable<ReturnType<typeof outputLimitOf>>;

/** Writes `n` as the body's output limit and quotes the call so. */
function writeOutputLimit(door: DoorConfig, call: Call, snap: Snapshot, at: Date, { fields, field }: OutputLimit, n: number): FittedQuote {
  call.body = withOutputLimit(call.body, fields, field, n);
  return { ...holdFor(door, call, snap, at), written: { field, value: n } };
}

/**
 * Whether the client's own body sets an output limit of its door's format. Another format's field (a chat client's
 * `max_output_tokens`) limits nothing this door sends, so it must not keep the gateway from lowering the default.
 */
export function clientSentOutputLimit(door: DoorConfig, call: Call): boolean {
  return (clientLimits(door).output ?? []).some((name) => call.client[name] !== undefined && call.client[name] !== null);
}

/** The body with `field` set to `limit` and the wire format's other output limits (written by the chain) removed. */
function withOutputLimit(body: Call['body'], outputFields: readonly string[], field: string, limit: number): Call['body'] {
  const out = { ...body };
  for (const name of outputFields) delete out[name];
  out[field] = limit;
  return out;
}
