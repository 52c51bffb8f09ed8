// Which model a call names, and whether this door may serve it: 404 with the closest id,
// 404 naming the successor once a model is no longer sold, 400 naming the right door.

import { startOfKoreanDay } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import type { ModelEntry } from '../core/types.ts';
import type { Catalog } from './catalog.ts';
import type { DoorConfig, GatewayConfig } from './config.ts';
import { suggestForId } from './model-suggestion.ts';

export const isOnSale = (m: ModelEntry, now: Date) => !m.sale_ends || now < startOfKoreanDay(m.sale_ends);

export function resolveModel(catalog: Catalog, cfg: GatewayConfig, door: DoorConfig, id: unknown, now: Date): ModelEntry {
  if (id === undefined || id === null || id === '') throw errors.invalidRequest('model is required.', 'model');
  if (typeof id !== 'string') throw errors.invalidRequest('model must be a string.', 'model');
  const model = modelOnSale(catalog, id, now, door);
  if (!model.doors.includes(door.name)) throw errors.wrongDoor(wrongDoorMessage(model, door, cfg));
  return model;
}

/**
 * The catalog model `id`, on sale at `now`; else a 404 naming the model most like it (one the door, when given,
 * serves), or the successor of one no longer sold.
 */
export function modelOnSale(catalog: Catalog, id: string, now: Date, door?: DoorConfig): ModelEntry {
  const model = catalog.models.get(id);
  if (!model) {
    const suggestion = closestModel(catalog, id, now, door);
    throw errors.modelNotFound(`The model '${id}' does not exist. Did you mean '${suggestion}'?`, suggestion);
  }
  if (!isOnSale(model, now)) {
    throw errors.modelNotFound(
      `The model '${id}' is no longer sold since ${model.sale_ends}. Use its successor '${model.successor}'.`,
      model.successor ?? undefined,
    );
  }
  return model;
}

function closestModel(catalog: Catalog, id: string, now: Date, door: DoorConfig | undefined): string {
  const all = [...catalog.models.values()];
  const onSale = all.filter((m) => isOnSale(m, now));
  const served = door ? onSale.filter((m) => m.doors.includes(door.name)) : onSale;
  return (suggestForId(id, served.length ? served : onSale.length ? onSale : all) ?? all[0]!).id; // a catalog that loaded has models
}

const KIND_WORDS: Record<string, string> = {
  text: 'a text model',
  image: 'an image model',
  video: 'a video model',
  speech: 'a speech model',
  embedding: 'an embedding model',
  moderation: 'a moderation model',
};

function wrongDoorMessage(model: ModelEntry, door: DoorConfig, cfg: GatewayConfig): string {
  const paths = model.doors.map((d) => `POST ${cfg.doors[d]?.path ?? d}`);
  const use = paths.length === 1 ? paths[0] : `${paths.slice(0, -1).join(', ')} or ${paths[paths.length - 1]}`;
  let why: string;
  if (!door.serves.kinds.includes(model.kind)) {
    why = `'${model.id}' is ${KIND_WORDS[model.kind]}, which ${door.path} does not serve`;
  } else if (!door.serves.vendors.includes(model.vendor)) {
    const served = door.serves.vendors.map((v) => v.toUpperCase()).join(', ');
    why = `'${model.id}' is a vendor ${model.vendor.toUpperCase()} model; ${door.path} serves vendor ${served} models only`;
  } else {
    why = `'${model.id}' is not served on ${door.path}`;
  }
  return `${why}. Use ${use}.`;
}
