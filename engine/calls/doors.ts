// The Fastify app: every door in config/doors.yaml, the catalog and balance doors, and the plugins
// for keys and admin. Each model door runs the same chain: auth → prepare → reserve → exchange.
import multipart from '@fastify/multipart';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Accounts, Caller } from '../money/accounts.ts';
import type { UploadedFile } from '../core/call.ts';
import type { Clock } from '../core/clock.ts';
import type { DoorConfig } from '../catalog/config.ts';
import { errors, type ErrorShape } from '../core/errors.ts';
import { exchange, type ExchangeDeps } from './exchange.ts';
import { fromThrown, sendError } from '../http/reply-error.ts';
import { modelRecord } from '../catalog/model-record.ts';
import { MULTIPART_PLUGIN_OPTIONS, readMultipartForm } from '../http/multipart.ts';
import { isOnSale } from '../catalog/model-lookup.ts';
import { reservationFor } from './reservation.ts';
import { prepareCall, type TransformRegistry } from './prepare.ts';
import { costOfUsage } from '../catalog/pricing.ts';
import type { Runtime, Snapshot } from '../catalog/runtime.ts';
import type { JsonObject, ModelEntry } from '../core/types.ts';
import type { UpstreamClient } from './upstream.ts';
import type { VendorRoutes } from './vendor-routes.ts';

export interface GatewayServices {
  runtime: Runtime;
  accounts: Accounts;
  routes: VendorRoutes;
  upstream: UpstreamClient;
  registry: TransformRegistry;
  clock: Clock;
  /** Which models this caller may call (plan and audience), for GET /v1/models; all when absent. */
  modelsFor?: (caller: Caller) => Promise<(model: ModelEntry) => boolean>;
  /** Credits of the caller's wallet, for GET /v1/credits. */
  credits?: (walletId: string) => Promise<Record<string, unknown>>;
  /** Extra route plugins (keys, admin), registered after the doors. */
  plugins?: ((app: FastifyInstance) => Promise<void>)[];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    errorShape?: ErrorShape;
  }
}

export async function buildServer(services: GatewayServices, opts: FastifyServerOptions = {}): Promise<FastifyInstance> {
  const limits = services.runtime.snapshot().config.limits;
  const app = Fastify({
    bodyLimit: limits.body_limit_bytes,
    logger: opts.logger ?? false,
    ...opts,
  });
  app.setErrorHandler((err, req, reply) => {
    const shape = req.routeOptions.config?.errorShape ?? 'chat';
    const gatewayError = fromThrown(err);
    if (gatewayError.status >= 500) req.log.error({ err }, 'request failed');
    sendError(reply, gatewayError, shape);
  });
  app.setNotFoundHandler((req, reply) => {
    sendError(reply, errors.notFound(`No door at ${req.method} ${req.url.split('?')[0]}.`), 'chat');
  });

  for (const door of Object.values(services.runtime.snapshot().config.doors)) {
    if (door.body === 'json') {
      app.post(door.path, { config: { errorShape: door.errors } }, (req, reply) => serveModelDoor(door.name, req, reply, services, jsonBody));
    } else if (door.body === 'multipart') {
      // The multipart parser lives in its own scope, so the JSON doors never accept a form.
      app.register(async (scope) => {
        await scope.register(multipart, MULTIPART_PLUGIN_OPTIONS);
        scope.post(door.path, { config: { errorShape: door.errors } }, (req, reply) =>
          serveModelDoor(door.name, req, reply, services, multipartBody),
        );
      });
    }
    // json-or-multipart doors (videos) are served by their own plugin.
  }
  app.get('/v1/models', (req, reply) => listModels(req, reply, services));
  app.get('/v1/credits', async (req) => {
    const caller = await services.accounts.authenticate(req.headers);
    if (!services.credits) throw errors.unavailable('Credits are not available.');
    return services.credits(caller.walletId);
  });
  for (const plugin of services.plugins ?? []) await plugin(app);
  return app;
}

/** How a door reads its request: the JSON body, or a form's values with its files kept aside. */
type BodyReader = (req: FastifyRequest, door: DoorConfig, snap: Snapshot) => Promise<{ body: JsonObject; files?: Record<string, UploadedFile> }>;

const jsonBody: BodyReader = async (req) => {
  const body = req.body;
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw errors.invalidRequest('The request body must be a JSON object.');
  }
  return { body: body as JsonObject };
};

/** The whole form is read (files up to limits.file_limit_bytes, else 413) before any reservation. */
const multipartBody: BodyReader = (req, door, snap) => readMultipartForm(req, door, snap.config.limits.file_limit_bytes);

async function serveModelDoor(doorName: string, req: FastifyRequest, reply: FastifyReply, s: GatewayServices, readBody: BodyReader) {
  const snap = s.runtime.snapshot();
  const door = snap.config.doors[doorName];
  const now = s.clock.now();
  const caller = await s.accounts.authenticate(req.headers, door.key_headers);
  const { body, files } = await readBody(req, door, snap);
  const prepared = prepareCall(snap, door, body, req.headers, caller, s.registry, { now, files });
  const { call } = prepared;
  const amount = reservationFor(door, call, snap, now);
  const hold = door.billing === 'free' ? null : await s.accounts.admit(caller, call.model, amount, call.id);
  const deps: ExchangeDeps = {
    upstream: s.upstream,
    registry: s.registry,
    accounts: s.accounts,
    log: req.log,
    costOf: (c, usage) =>
      costOfUsage(c.model, usage, { billing: snap.config.billing, modelById: (id) => snap.catalog.models.get(id), at: now }),
  };
  await exchange(
    {
      prepared,
      door,
      vendor: snap.config.vendors[call.model.vendor],
      routes: s.routes[call.model.vendor],
      caller,
      hold,
      clientHeaders: req.headers,
      timeoutMs: snap.config.limits.call_timeout_ms[door.name] ?? 300_000,
      retryAfterMaxMs: snap.config.limits.retry_after_max_ms,
      reply,
    },
    deps,
  );
  return reply;
}

async function listModels(req: FastifyRequest, reply: FastifyReply, s: GatewayServices) {
  const caller = await s.accounts.authenticate(req.headers);
  const mayCall = s.modelsFor ? await s.modelsFor(caller) : () => true;
  const snap = s.runtime.snapshot();
  const now = s.clock.now();
  const data = [...snap.catalog.models.values()]
    .filter((m) => isOnSale(m, now) && mayCall(m))
    .map((m) => modelRecord(m, snap.config, now));
  return reply.send({ object: 'list', data });
}


