// What the bundled simulator refuses as the vendor would: the catalog's `vendor_refuses` rules, read from the
// running catalog at each call (a reload applies to the next one).

import type { Runtime } from '../catalog/runtime.ts';
import type { JsonObject } from '../core/types.ts';
import { firstRefusal } from './refusals.ts';

/** What the simulator refuses as the vendor would: the catalog's `vendor_refuses` rules. */
export function vendorRefusals(runtime: Runtime) {
  return ({ path, model, body }: { path: string; model: string; body: Record<string, unknown> }) => {
    const snap = runtime.snapshot();
    const entry = snap.catalog.models.get(model);
    if (!entry) return null;
    for (const name of entry.rules) {
      const rule = snap.config.rules[name];
      const onPath = !rule?.doors || rule.doors.some((d) => snap.config.doors[d]?.path === path);
      if (!rule?.vendor_refuses || !onPath) continue;
      const hit = firstRefusal(rule.vendor_refuses, { body: body as JsonObject, headers: {} });
      if (hit) return { status: 400, message: hit.message };
    }
    return null;
  };
}

/** Each model's context window, from the running catalog: the simulator refuses longer input as the vendor does. */
export function contextWindows(runtime: Runtime) {
  return (model: string) => runtime.snapshot().catalog.models.get(model)?.context_window;
}

/**
 * Each model's most output, from the running catalog: the simulator refuses a larger output limit as the vendor
 * does. Not for the vendors whose hosts honour a larger limit (config/billing.yaml `reservation.output_cap_written`).
 */
export function maxOutputs(runtime: Runtime) {
  return (model: string) => {
    const snap = runtime.snapshot();
    const entry = snap.catalog.models.get(model);
    if (!entry || snap.config.billing.reservation.output_cap_written?.[entry.vendor]) return undefined;
    return entry.max_output;
  };
}
