// The key doors: GET /v1/key (normal key) and the five key-management doors (management key only). The choices
// the public contract leaves open are engine/keys/README.md's, "Choices".

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { listAudit, parseAuditQuery } from '../audit/query.ts';
import { type Actor, requestOrigin } from '../audit/trail.ts';
import type { Clock } from '../core/clock.ts';
import { koreanDate } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import { parseJsonOrEmpty } from '../http/json-or-empty.ts';
import { installErrorHandler } from '../http/reply-error.ts';
import { parseGroupCreate, parseGroupPatch } from './group-validate.ts';
import { createGroup, deleteGroup, getGroup, listGroups, patchGroup } from './groups.ts';
import { closeApiKey, createKeys, getKey, listKeys, patchKey } from './manage.ts';
import { type KeyService, keyFromHeaders } from './service.ts';
import type { AuthContext } from './types.ts';
import { parseCreate, parseListQuery, parsePatch } from './validate.ts';

/** The management key that made a change, and where its request came from: the audit trail's `who`. */
const actorOf = (auth: AuthContext, req: FastifyRequest): Actor => ({ kind: 'management_key', id: auth.keyId, ...requestOrigin(req) });

interface KeyRouteDeps {
  keys: KeyService;
  db: Db;
  clock: Clock;
}

/** Registers the key doors in their own encapsulated scope (own JSON parser and error handler). */
export async function registerKeyRoutes(app: FastifyInstance, deps: KeyRouteDeps): Promise<void> {
  await app.register(async (scope) => {
    const { keys, clock } = deps;

    parseJsonOrEmpty(scope);

    installErrorHandler(scope);

    const management = (headers: Record<string, string | string[] | undefined>) =>
      keys.authenticate(keyFromHeaders(headers, { allowXApiKey: false }), 'management');

    // The doors with a body check the management key before reading it, so no key means no body read.
    const managementFirst = {
      onRequest: async (req: FastifyRequest) => {
        await management(req.headers);
      },
    };

    // GET /v1/key: the calling key's quota status. Normal key; no charge.
    scope.get('/v1/key', async (req) => {
      const auth = await keys.authenticate(keyFromHeaders(req.headers, { allowXApiKey: false }), 'api');
      return keys.quota.keyStatus(auth, clock.now());
    });

    scope.get('/v1/keys', async (req) => {
      const auth = await management(req.headers);
      const { limit, offset } = parseListQuery(req.query);
      const { data, total } = await listKeys(deps, auth.walletId, { limit, offset });
      return { object: 'list', data, total, has_more: offset + data.length < total };
    });

    scope.post('/v1/keys', managementFirst, async (req, reply) => {
      const auth = await management(req.headers);
      const input = parseCreate(req.body, koreanDate(clock.now()));
      const data = await createKeys(deps, auth.walletId, input, actorOf(auth, req));
      return reply.code(201).send({ object: 'list', data, incomplete: false });
    });

    scope.get<{ Params: { id: string } }>('/v1/keys/:id', async (req) => {
      const auth = await management(req.headers);
      return getKey(deps, auth.walletId, req.params.id);
    });

    scope.patch<{ Params: { id: string } }>('/v1/keys/:id', managementFirst, async (req) => {
      const auth = await management(req.headers);
      const input = parsePatch(req.body, koreanDate(clock.now()));
      return patchKey(deps, auth.walletId, req.params.id, input, actorOf(auth, req));
    });

    scope.delete<{ Params: { id: string } }>('/v1/keys/:id', async (req) => {
      const auth = await management(req.headers);
      await closeApiKey(deps, auth.walletId, req.params.id, actorOf(auth, req));
      return { id: req.params.id, object: 'api_key', deleted: true };
    });

    // Key groups (a school's classes): their limits cap the sum of their keys' use (groups.ts).
    scope.get('/v1/key-groups', async (req) => {
      const auth = await management(req.headers);
      const data = await listGroups(deps, auth.walletId);
      return { object: 'list', data, total: data.length, has_more: false };
    });

    scope.post('/v1/key-groups', managementFirst, async (req, reply) => {
      const auth = await management(req.headers);
      return reply.code(201).send(await createGroup(deps, auth.walletId, parseGroupCreate(req.body), actorOf(auth, req)));
    });

    scope.get<{ Params: { id: string } }>('/v1/key-groups/:id', async (req) => {
      const auth = await management(req.headers);
      return getGroup(deps, auth.walletId, req.params.id);
    });

    scope.patch<{ Params: { id: string } }>('/v1/key-groups/:id', managementFirst, async (req) => {
      const auth = await management(req.headers);
      return patchGroup(deps, auth.walletId, req.params.id, parseGroupPatch(req.body), actorOf(auth, req));
    });

    scope.delete<{ Params: { id: string } }>('/v1/key-groups/:id', async (req) => {
      const auth = await management(req.headers);
      await deleteGroup(deps, auth.walletId, req.params.id, actorOf(auth, req));
      return { id: req.params.id, object: 'key_group', deleted: true };
    });

    // The wallet's audit trail, newest first: `action`, `since`, `until`, `limit`, `offset`.
    scope.get('/v1/audit', async (req) => {
      const auth = await management(req.headers);
      return { object: 'list', ...(await listAudit(deps.db, auth.walletId, parseAuditQuery(req.query))) };
    });
  });
}
