// The most a call can cost, by the door's billing kind: what the ledger holds before the vendor call.
import type { Call } from '../core/call.ts';
import type { DoorConfig } from '../catalog/config.ts';
import { tokenCost, textReservation, usdToNano } from '../catalog/pricing.ts';
import type { Snapshot } from '../catalog/runtime.ts';

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
    case 'tokens':
      return textReservation(model, body, {
        billing: snap.config.billing,
        modelById: (id) => snap.catalog.models.get(id),
        at,
      });
  }
}
