// The most a call can cost, by the door's billing kind: what the ledger holds before the vendor call, and
// what the client can change to hold less (the advice of a 402).

import type { DoorConfig } from '../catalog/config.ts';
import { imageReservation } from '../catalog/image-bounds.ts';
import { heldTokensOf, textReservation, tokenCost } from '../catalog/pricing.ts';
import type { Snapshot } from '../catalog/runtime.ts';
import { type TextBounds, textBounds } from '../catalog/text-bounds.ts';
import { everyFormatsLimits, honouredLimits } from '../catalog/wire-format.ts';
import type { Call, HeldTokens } from '../core/call.ts';
import { derivedFrom } from '../core/derived.ts';
import { errors } from '../core/errors.ts';
import type { HonouredLimits } from '../core/protocol.ts';
import type { JsonObject } from '../core/types.ts';

export interface HoldQuote {
  amount: bigint;
  /** What the client can change to lower the amount, as a clause (`lower max_tokens (4096)`); absent: only a top-up helps. */
  advice?: string;
  /** The token bounds a text call's amount holds, which its estimate may not exceed; absent for other calls. */
  heldTokens?: HeldTokens;
}

export function holdFor(door: DoorConfig, call: Call, snap: Snapshot, at: Date): HoldQuote {
  const { model, body } = call;
  switch (door.billing) {
    case 'free':
      return { amount: 0n };
    case 'image':
      return { amount: imageReservation(model, body, Object.keys(call.files ?? {}).length, snap.config.billing, at) };
    case 'characters':
      return { amount: tokenCost(call.notes.fixedUsage?.characters ?? 0, model.pricing.per_mchar ?? 0) };
    case 'video':
      return { amount: 0n }; // video jobs hold seconds × per-second price in their own flow
    case 'tokens': {
      const billing = snap.config.billing;
      // The vendor's wire format decides the limits it enforces, and where its body's image parts sit.
      const honoured = honouredLimits(door, model.vendor);
      const bounds = textBounds(model, body, billing, honoured, {
        maxOutputOf: (id) => snap.catalog.models.get(id)?.max_output,
        images: call.settings.images,
      });
      refuseLimitPastMaxOutput(bounds, call);
      const amount = textReservation(model, bounds, { billing, modelById: (id) => snap.catalog.models.get(id), at });
      const advice = adviceFor(bounds, call.client, honoured);
      return { amount, heldTokens: heldTokensOf(bounds), ...(advice ? { advice } : {}) };
    }
  }
}

/**
 * An output limit above the model's maximum output is the client's mistake, which the vendor refuses too: a 400
 * naming the field as the client sent it and the maximum, before anything is held. (A chain that lowers such a
 * limit for a vendor that would honour it, cap-output, has already lowered it here.)
 */
function refuseLimitPastMaxOutput(b: TextBounds, call: Call): void {
  const most = call.model.max_output;
  const limit = b.outputLimit;
  if (!most || !limit || limit.value <= most) return;
  const sent = nameSent(limit, call.client) ?? limit.field;
  throw errors.invalidRequest(
    `${sent} is ${limit.value}, above the most ${call.model.id} can write (${most} output tokens). Send ${sent} of at most ${most}, or omit it.`,
    sent,
  );
}

/**
 * The name under which the client sent the output limit: the limit's own, else any format's output limit field
 * holding its value (a translation may have renamed it). Undefined when the client sent none (one was filled in).
 */
function nameSent(limit: NonNullable<TextBounds['outputLimit']>, client: JsonObject): string | undefined {
  if (client[limit.field] === limit.value) return limit.field;
  for (const name of outputLimitNames(everyFormatsLimits())) if (client[name] === limit.value) return name;
  return undefined;
}

/** The output limit fields of every wire format. */
const outputLimitNames = derivedFrom((limits: HonouredLimits[]) => [...new Set(limits.flatMap((l) => l.output ?? []))]);

/**
 * How to lower a text call's hold, naming the limit as the client sent it: a translation for another vendor
 * may have renamed it (max_completion_tokens reaches vendor A as max_tokens) or filled it in (none was sent).
 * Nothing when the call produces no output (embeddings): only a top-up helps.
 */
function adviceFor(b: TextBounds, client: JsonObject, honoured: HonouredLimits): string | undefined {
  const choices = b.choices.field ? `${b.choices.field} (${b.choices.count})` : undefined;
  const limit = b.outputLimit;
  const sent = limit && nameSent(limit, client);
  if (limit && sent) return `lower ${sent} (${limit.value})${choices ? ` or ${choices}` : ''} to lower the reservation`;
  if (b.outputPerChoice === 0) return undefined;
  const names = (honoured.output ?? []).join(' or ') || 'an output limit';
  return (
    `send ${names}${choices ? `, or lower ${choices},` : ''} to lower the reservation ` +
    `(without one it covers ${b.outputPerChoice} output tokens per answer)`
  );
}
