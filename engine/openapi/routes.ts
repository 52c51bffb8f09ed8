// Serves GET /openapi.json (no key needed: it describes the interface, not a wallet).
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../catalog/runtime.ts';
import { registeredRoutes } from '../http/route-list.ts';
import { projectPath } from '../core/project-path.ts';
import { openApiDocument } from './document.ts';

const VERSION = (JSON.parse(readFileSync(projectPath(import.meta.url, 'package.json'), 'utf8')) as { version: string }).version;

export function registerOpenApiRoute(app: FastifyInstance, runtime: Runtime): void {
  // Built at each request from the routes and the doors of the current snapshot, so a reload shows at once.
  app.get('/openapi.json', async () => openApiDocument(registeredRoutes(app), runtime.snapshot().config.doors, VERSION));
}
