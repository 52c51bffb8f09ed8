// The alert doors, for a management key of the wallet (like /v1/keys): webhook endpoints, their deliveries and
// replay, and the wallet's alert thresholds. The interface names no webhook doors, so these are this gateway's
// own (docs/api.md "Webhooks and alerts"). Error bodies use the chat-completions shape, as the key doors do.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Actor, requestOrigin } from '../audit/trail.ts';
import { errors } from '../core/errors.ts';
import { parseJsonOrEmpty } from '../http/json-or-empty.ts';
import { installErrorHandler } from '../http/reply-error.ts';
import { type KeyService, keyFromHeaders } from '../keys/index.ts';
import { listDeliveries, replayEvent } from './deliveries.ts';
import {
  createWebhook,
  deleteWebhook,
  listWebhooks,
  parseSettings,
  readSettings,
  type StoreDeps,
  settingsView,
  writeSettings,
} from './store.ts';

interface AlertRouteDeps extends StoreDeps {
  keys: KeyService;
  /** A delivery was queued here (a replay): send it now rather than at the next round. */
  queued: () => void;
}

export async function registerAlertRoutes(app: FastifyInstance, deps: AlertRouteDeps): Promise<void> {
  await app.register(async (scope) => {
    parseJsonOrEmpty(scope);
    installErrorHandler(scope);

    const management = async (req: FastifyRequest) => {
      const auth = await deps.keys.authenticate(keyFromHeaders(req.headers, { allowXApiKey: false }), 'management');
      const actor: Actor = { kind: 'management_key', id: auth.keyId, ...requestOrigin(req) };
      return { walletId: auth.walletId, actor };
    };
    // The key is checked before the body is read: no key, no body parsed.
    const first = { onRequest: async (req: FastifyRequest) => void (await management(req)) };

    scope.post('/v1/webhooks', first, async (req, reply) => {
      const { walletId, actor } = await management(req);
      return reply.code(201).send(await createWebhook(deps, walletId, req.body, actor));
    });

    scope.get('/v1/webhooks', async (req) => {
      const { walletId } = await management(req);
      return { object: 'list', data: await listWebhooks(deps.db, walletId) };
    });

    scope.delete<{ Params: { id: string } }>('/v1/webhooks/:id', async (req) => {
      const { walletId, actor } = await management(req);
      await deleteWebhook(deps, walletId, req.params.id, actor);
      return { id: req.params.id, object: 'webhook', deleted: true };
    });

    scope.get<{ Params: { id: string }; Querystring: { limit?: string } }>('/v1/webhooks/:id/deliveries', async (req) => {
      const { walletId } = await management(req);
      const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 200)
        throw errors.invalidRequest('limit must be a whole number from 1 to 200.', 'limit');
      return { object: 'list', data: await listDeliveries(deps.db, walletId, req.params.id, limit) };
    });

    scope.post<{ Params: { id: string; event: string } }>('/v1/webhooks/:id/events/:event/replay', async (req, reply) => {
      const { walletId } = await management(req);
      const id = await replayEvent(deps.db, walletId, req.params.id, req.params.event);
      deps.queued();
      return reply.code(202).send({ object: 'webhook_delivery', id, event_id: req.params.event, state: 'pending' });
    });

    scope.get('/v1/alerts', async (req) => {
      const { walletId } = await management(req);
      return settingsView(await readSettings(deps.db, walletId));
    });

    scope.patch('/v1/alerts', first, async (req) => {
      const { walletId, actor } = await management(req);
      const next = parseSettings(req.body ?? {}, await readSettings(deps.db, walletId));
      return settingsView(await writeSettings(deps, walletId, next, actor));
    });
  });
}
