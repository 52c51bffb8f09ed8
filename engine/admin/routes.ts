// The operator's admin API under /admin/v1 (its doors: docs/operating.md, "Operator commands"). With no
// GATEWAY_ADMIN_TOKEN the routes are not registered, so every admin path answers the app's 404 to all but this
// start's local credential, and an unconfigured gateway shows no admin surface at all.
import type { FastifyInstance } from 'fastify';
import { type Actor, recordAudit } from '../audit/trail.ts';
import { type Clock, koreanDate, systemClock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import type { DisplayCurrency } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import { installErrorHandler } from '../http/reply-error.ts';
import { closeManagementKey, type KeyService } from '../keys/index.ts';
import { createOperatorKey } from '../keys/manage.ts';
import type { ApiKeyRecord } from '../keys/records.ts';
import type { ClosedManagementKey } from '../keys/service.ts';
import type { Ledger } from '../money/ledger.ts';
import { expiresAtFrom } from '../money/top-up.ts';
import { acceptedTokens, requireAdminToken, tokenMatches } from './admin-token.ts';
import { registerApiKeyRoute } from './api-key-routes.ts';
import { labelFrom, objectBody, wholeCredits } from './body.ts';
import { registerManagementKeyRoutes } from './management-key-routes.ts';
import { creditsAdded, operatorActor, ownerChanged, registerAuditRoute } from './operator-audit.ts';
import { registerWalletRoutes } from './wallet-routes.ts';
import { countActiveKeysIn, lotAdded, walletView } from './wallet-view.ts';

interface AdminDeps {
  ledger: Ledger;
  /** GATEWAY_ADMIN_TOKEN; unset or empty (and no localToken) → admin routes answer 404. */
  adminToken?: string | undefined;
  /** This start's credential for the operator tools on the same machine (running-gateway-file.ts). */
  localToken?: string | undefined;
  /** Implemented by the key service: a management key created by the wallet's current owner. */
  createManagementKey: (walletId: string, name: string | undefined, actor: Actor) => Promise<{ id: string; key: string }>;
  /** An API key for the wallet (keys/manage.ts createOperatorKey); without it POST …/keys is not served. */
  createApiKey?: (walletId: string, body: unknown, actor: Actor) => Promise<ApiKeyRecord>;
  /** Closes one open management key of the wallet at once (keys/management-keys.ts); false when none. */
  closeManagementKey: (walletId: string, keyId: string, actor: Actor) => Promise<boolean>;
  /** Active slot-occupying keys of a wallet; default: countActiveKeysIn over `db`. */
  countActiveKeys?: (walletId: string) => Promise<number>;
  /** The ledger's database: the wallet views, listings and the audit trail read it. */
  db: Db;
  /** Called after POST …/owner changed the owner: closes the old owner's management keys (audited as `actor`'s) and says which. */
  onOwnerChanged?: (walletId: string, previousOwnerId: string, ownerId: string, actor: Actor) => Promise<ClosedManagementKey[]>;
  clock?: Clock;
  /** billing.yaml's display_currency in force (answers show money in it, amounts may be typed in it). */
  displayCurrency?: () => DisplayCurrency | null;
}

type KeyActions = Pick<AdminDeps, 'createManagementKey' | 'closeManagementKey' | 'createApiKey' | 'onOwnerChanged'>;

/** The admin API's key actions done by the gateway's key service (tests may give their own). */
export function keyActionsOf(keys: KeyService, db: Db, clock: Clock): KeyActions {
  return {
    createManagementKey: (walletId, name, actor) => keys.createManagementKey(walletId, name, actor),
    closeManagementKey: (walletId, keyId, actor) => closeManagementKey(keys, walletId, keyId, actor),
    createApiKey: (walletId, body, actor) => createOperatorKey({ keys, db, clock }, walletId, body, actor),
    // The former owner's management keys close with the change of owner.
    onOwnerChanged: (walletId, _previous, _owner, actor) => keys.closeFormerOwnerManagementKeys(walletId, actor),
  };
}

export { countActiveKeysIn, tokenMatches, walletView };

export async function registerAdminRoutes(app: FastifyInstance, deps: AdminDeps): Promise<void> {
  if (acceptedTokens(deps).length === 0) return; // unset: no admin routes, every /admin path is the app's 404
  const { ledger } = deps;
  const clock = deps.clock ?? systemClock;
  const currency = () => deps.displayCurrency?.() ?? null;
  const countActiveKeys = deps.countActiveKeys ?? ((walletId: string) => countActiveKeysIn(deps.db, walletId, koreanDate(clock.now())));

  const requireWallet = async (id: string) => {
    const w = await ledger.getWallet(id);
    if (!w) throw errors.notFound(`No wallet '${id}'.`);
    return w;
  };

  await app.register(async (scope) => {
    installErrorHandler(scope);

    scope.addHook('onRequest', requireAdminToken(deps));
    registerWalletRoutes(scope, { ...deps, clock, currency, requireWallet, countActiveKeys });

    scope.post<{ Params: { id: string } }>('/admin/v1/wallets/:id/credits', async (req, reply) => {
      const b = objectBody(req.body, ['credits', 'vendors', 'expires_at', 'label']);
      if (b.credits === undefined) throw errors.invalidRequest('credits is required.', 'credits');
      const credits = wholeCredits(b.credits, 'credits', { min: 1 }, currency());
      const expiresAt = expiresAtFrom(b.expires_at);
      let vendors: string[] | null = null;
      if (b.vendors !== undefined && b.vendors !== null) {
        if (!Array.isArray(b.vendors) || b.vendors.some((v) => typeof v !== 'string')) {
          throw errors.invalidRequest('vendors must be an array of vendor ids such as ["c"].', 'vendors');
        }
        vendors = b.vendors as string[];
      }
      const actor = operatorActor(req, deps.localToken);
      const lot = await ledger.topUp(req.params.id, {
        credits,
        vendors,
        expiresAt,
        label: labelFrom(b.label),
        beside: (tx, made) => recordAudit(tx, actor, creditsAdded(req.params.id, made, credits), clock.now()),
      });
      return reply.code(201).send(lotAdded(lot, currency()));
    });

    scope.post<{ Params: { id: string } }>('/admin/v1/wallets/:id/management-keys', async (req, reply) => {
      const b = objectBody(req.body, ['name']);
      if (b.name !== undefined && b.name !== null && (typeof b.name !== 'string' || b.name.length > 40)) {
        throw errors.invalidRequest('name must be a string of up to 40 characters.', 'name');
      }
      await requireWallet(req.params.id);
      const name = (b.name as string | null | undefined) ?? undefined;
      const k = await deps.createManagementKey(req.params.id, name, operatorActor(req, deps.localToken));
      return reply.code(201).send({ id: k.id, key: k.key, name: name ?? null });
    });

    if (deps.createApiKey)
      registerApiKeyRoute(scope, {
        requireWallet,
        createApiKey: (walletId, body, req) => deps.createApiKey!(walletId, body, operatorActor(req, deps.localToken)),
      });

    registerManagementKeyRoutes(scope, {
      db: deps.db,
      requireWallet,
      closeManagementKey: (walletId, keyId, req) => deps.closeManagementKey(walletId, keyId, operatorActor(req, deps.localToken)),
    });
    registerAuditRoute(scope, { db: deps.db, requireWallet });

    scope.post<{ Params: { id: string } }>('/admin/v1/wallets/:id/owner', async (req) => {
      const b = objectBody(req.body, ['owner_id']);
      if (typeof b.owner_id !== 'string' || b.owner_id.trim() === '' || b.owner_id.length > 200) {
        throw errors.invalidRequest('owner_id is required: a non-empty string of up to 200 characters.', 'owner_id');
      }
      const before = await requireWallet(req.params.id);
      const actor = operatorActor(req, deps.localToken);
      const w = await ledger.setOwner(req.params.id, b.owner_id, (tx, previous) =>
        recordAudit(tx, actor, ownerChanged(req.params.id, previous, b.owner_id as string), clock.now()),
      );
      const closed =
        deps.onOwnerChanged && before.ownerId !== w.ownerId ? await deps.onOwnerChanged(w.id, before.ownerId, w.ownerId, actor) : [];
      return { id: w.id, owner_id: w.ownerId, closed_management_keys: closed };
    });
  });
}
