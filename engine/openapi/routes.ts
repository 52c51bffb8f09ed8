// Serves GET /openapi.json (no key needed: it describes the interface, not a wallet). Anyone gets the public
// doors; the operator's routes (the admin API, the dashboard's pages, health and metrics) are described only to
// a request carrying the admin token, since a list of them tells an outsider where to knock.
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Runtime } from '../catalog/runtime.ts';
import { projectPath } from '../core/project-path.ts';
import { type RouteInfo, registeredRoutes } from '../http/route-list.ts';
import { openApiDocument } from './document.ts';

const VERSION = (JSON.parse(readFileSync(projectPath(import.meta.url, 'package.json'), 'utf8')) as { version: string }).version;

interface OpenApiRouteDeps {
  runtime: Runtime;
  /** Whether the request carries the operator's admin token (then every route is described). */
  fromOperator: (req: FastifyRequest) => boolean;
}

/** The doors API clients call: everything under /v1/, and this description. */
const isPublicRoute = (route: RouteInfo): boolean => route.url.startsWith('/v1/') || route.url === '/openapi.json';

export function registerOpenApiRoute(app: FastifyInstance, deps: OpenApiRouteDeps): void {
  // Built at each request from the routes and the doors of the current snapshot, so a reload shows at once.
  app.get('/openapi.json', async (req) => {
    const routes = registeredRoutes(app);
    const described = deps.fromOperator(req) ? routes : routes.filter(isPublicRoute);
    return openApiDocument(described, deps.runtime.snapshot().config.doors, VERSION);
  });
}
