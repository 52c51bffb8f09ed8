// Which models a caller is shown: GET /v1/models lists what the key may call, and a refusal names the closest
// model the caller's credits can pay for.
import { isOnSale } from '../catalog/model-lookup.ts';
import { suggestLike } from '../catalog/model-suggestion.ts';
import type { Runtime } from '../catalog/runtime.ts';
import type { Clock } from '../core/clock.ts';
import type { ModelEntry } from '../core/types.ts';
import type { Caller } from '../money/accounts.ts';
import type { Ledger } from '../money/types.ts';
import { doorClosedTo } from './refusals.ts';

/**
 * The model of the same kind, on sale, of a vendor the caller may pay, most like `model` (catalog/model-suggestion.ts):
 * one served on every door `model` is, so the call that was refused works with it, else on one of them at least.
 */
function suggestModel(runtime: Runtime, model: ModelEntry, vendors: string[], now: Date): string | undefined {
  const payable = [...runtime.snapshot().catalog.models.values()].filter(
    (m) => m.kind === model.kind && vendors.includes(m.vendor) && isOnSale(m, now),
  );
  const everyDoor = payable.filter((m) => model.doors.every((door) => m.doors.includes(door)));
  const someDoor = payable.filter((m) => model.doors.some((door) => m.doors.includes(door)));
  return suggestLike(model, everyDoor.length > 0 ? everyDoor : someDoor)?.id;
}

/** GET /v1/models lists what the key may call: no model its credits cannot pay for, no door its audience may not use. */
export async function modelsCallerMayCall(ledger: Ledger, runtime: Runtime, caller: Caller): Promise<(m: ModelEntry) => boolean> {
  const denied = new Set<string>();
  for (const vendor of runtime.snapshot().config.billing.plan_restricted_vendors) {
    if (!(await ledger.planAllows(caller.walletId, vendor))) denied.add(vendor);
  }
  const config = runtime.snapshot().config;
  return (m) => !denied.has(m.vendor) && m.doors.some((door) => !doorClosedTo(config, door, caller));
}

/** suggestModel on the running catalog at the clock's time, as the wallet accounts ask it for a 403's suggestion. */
export function modelSuggester(runtime: Runtime, clock: Clock): (model: ModelEntry, vendors: string[]) => string | undefined {
  return (model, vendors) => suggestModel(runtime, model, vendors, clock.now());
}
