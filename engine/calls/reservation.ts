// The most a call can cost, by the door's billing kind: what the ledger holds before the vendor call.
import type { Call } from '../core/call.ts';
import { protocolNameFor, type DoorConfig } from '../catalog/config.ts';
import { tokenCost, textReservation, usdToNano } from '../catalog/pricing.ts';
import type { Snapshot } from '../catalog/runtime.ts';
import { textBounds } from '../catalog/text-bounds.ts';

export function reservationFor(door: DoorConfig, call: Call, snap: Snapshot, at: Date): bigint {
  const { model, body } = call;
  switch (door.billing) {
    case 'free':
      return 0n;
    case 'image':
      return usdToNano(model.pricing.image_reservation ?? 0);
    case 'characters':
      return tokenCost(call.notes.fixedUsage?.characters ?? 0, model.pricing.per_mchar ?? 0);
    case 'video':
      return 0n; // video jobs hold seconds × per-second price in their own flow
    case 'tokens': {
      const billing = snap.config.billing;
      // The upstream path is the wire format, which decides the limits the vendor enforces.
      const upstream = door.protocols[protocolNameFor(door, model.vendor) ?? '']?.upstream ?? '';
      const bounds = textBounds(model, body, billing, upstream);
      return textReservation(model, bounds, { billing, modelById: (id) => snap.catalog.models.get(id), at });
    }
  }
}
