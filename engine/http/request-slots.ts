// State a room keeps for one request, stored on the request itself rather than in a WeakMap keyed by it: a
// long-lived WeakMap keeps its entries alive through young collections, so every request outlived itself
// (docs/decisions/per-call-garbage.md). On the request object it dies with the request.
import type { FastifyInstance, FastifyRequest } from 'fastify';

interface RequestSlot<T> {
  get(req: FastifyRequest): T | undefined;
  set(req: FastifyRequest, value: T): void;
}

const declared: string[] = [];

/** A named slot on every request; `name` must be unique across the rooms. Made at module load. */
export function requestSlot<T>(name: string): RequestSlot<T> {
  const prop = `gateway_${name}`;
  if (declared.includes(prop)) throw new Error(`request slot '${name}' is declared twice`);
  declared.push(prop);
  const slots = (req: FastifyRequest) => req as unknown as Record<string, T | null | undefined>;
  return {
    get: (req) => slots(req)[prop] ?? undefined,
    set: (req, value) => {
      slots(req)[prop] = value;
    },
  };
}

/**
 * Declares every slot on the app's requests (Fastify's decorateRequest), so each request is built with them
 * already in place and all requests keep one shape. A slot set on a request of an app that did not declare
 * it still works; it is only slower.
 */
export function declareRequestSlots(app: FastifyInstance): void {
  for (const prop of declared) if (!app.hasRequestDecorator(prop)) app.decorateRequest(prop, null);
}
