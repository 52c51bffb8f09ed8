// Every route the app serves, as registered: the API description (GET /openapi.json) is built from this list,
// so a route cannot exist without being described.
import type { FastifyInstance } from 'fastify';
import type { ErrorBody } from '../core/errors.ts';

export interface RouteInfo {
  method: string;
  /** Fastify's form: `/v1/videos/:id`. */
  url: string;
  errorBody?: ErrorBody | undefined;
}

const routesOf = new WeakMap<FastifyInstance, RouteInfo[]>();

/** On the root before any route: an onRoute hook there sees the routes of every scope registered later. */
export function collectRoutes(app: FastifyInstance): void {
  const list: RouteInfo[] = [];
  routesOf.set(app, list);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD' || route.url === '*' || route.url === '/*') continue;
      list.push({ method, url: route.url, errorBody: route.config?.errorBody });
    }
  });
}

export const registeredRoutes = (app: FastifyInstance): readonly RouteInfo[] => routesOf.get(app) ?? [];
