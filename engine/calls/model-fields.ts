// Every body field that names a model is held to what the call's own `model` is held to (on sale, on the key's
// list, the call's vendor and door), so a second model cannot slip past the plan or the key's audience.
import type { Catalog } from '../catalog/catalog.ts';
import { modelOnSale } from '../catalog/model-lookup.ts';
import type { Call } from '../core/call.ts';
import { errors, isGatewayError } from '../core/errors.ts';
import { listAllows } from '../core/model-list.ts';
import type { ModelField } from '../core/protocol.ts';
import type { JsonObject, JsonValue } from '../core/types.ts';
import type { Caller } from '../money/accounts.ts';

/** Throws the refusal for the first declared field whose model the caller may not have run. */
export function checkModelFields(fields: readonly ModelField[], call: Call, caller: Caller, catalog: Catalog, now: Date): void {
  for (const { value, at } of namedModels(call.body, fields)) {
    // The call's own model was resolved and checked before the chain, under the name the client sent.
    if (at === 'model') continue;
    if (typeof value !== 'string' || value === '') throw errors.invalidRequest(`${at} must name a model, as a string.`, at);
    const model = onSale(catalog, value, now, at);
    if (!listAllows(caller.models, model.id)) throw errors.modelNotOnKeyList(model.id, caller.models ?? [], at);
    if (model.vendor !== call.model.vendor || !model.doors.includes(call.door)) {
      throw errors.invalidRequest(
        `${at} names '${model.id}', which vendor ${call.model.vendor.toUpperCase()} cannot run for a call to '${call.model.id}' ` +
          `on this door: name a vendor ${call.model.vendor.toUpperCase()} model this door serves.`,
        at,
      );
    }
  }
}

/** The catalog model on sale, its 404 (nearest id, or the successor) naming the field that named it. */
function onSale(catalog: Catalog, id: string, now: Date, at: string) {
  try {
    return modelOnSale(catalog, id, now);
  } catch (e) {
    if (!isGatewayError(e)) throw e;
    const suggestion = typeof e.extra.suggestion === 'string' ? e.extra.suggestion : undefined;
    throw errors.modelNotFound(`${at}: ${e.message}`, suggestion, at);
  }
}

/** Each value sitting where a declared field names a model, with where it sits (`model`, `tools[1].model`). */
function namedModels(body: JsonObject, fields: readonly ModelField[]): { value: JsonValue; at: string }[] {
  const found: { value: JsonValue; at: string }[] = [];
  for (const { field, in: list } of fields) {
    if (list === undefined) {
      if (body[field] !== undefined) found.push({ value: body[field], at: field });
      continue;
    }
    const entries = body[list];
    if (!Array.isArray(entries)) continue;
    entries.forEach((entry, i) => {
      if (!isObject(entry)) return; // a spelling other than the field's was refused with the client's body (prepare.ts)
      if (entry[field] !== undefined) found.push({ value: entry[field], at: `${list}[${i}].${field}` });
    });
  }
  return found;
}

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
