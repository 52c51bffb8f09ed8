// The admin routes over a wallet's management keys besides creation (routes.ts lists them all): the list,
// and closing one. They run inside the admin scope, behind its token check and error handler.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.ts';
import type { Db } from '../db/db.ts';
import { listManagementKeys } from '../keys/management-keys.ts';

interface ManagementKeyRouteDeps {
  db: Db;
  /** The wallet, or 404 not_found_error. */
  requireWallet: (id: string) => Promise<unknown>;
  /** Closes the key as the change of the operator who made this request (the audit trail's `who`). */
  closeManagementKey: (walletId: string, keyId: string, req: FastifyRequest) => Promise<boolean>;
}

export function registerManagementKeyRoutes(scope: FastifyInstance, deps: ManagementKeyRouteDeps): void {
  scope.get<{ Params: { id: string } }>('/admin/v1/wallets/:id/management-keys', async (req) => {
    await deps.requireWallet(req.params.id);
    return { object: 'list', data: await listManagementKeys(deps.db, req.params.id) };
  });

  scope.delete<{ Params: { id: string; keyId: string } }>('/admin/v1/wallets/:id/management-keys/:keyId', async (req) => {
    const { id, keyId } = req.params;
    await deps.requireWallet(id);
    if (!(await deps.closeManagementKey(id, keyId, req))) {
      throw errors.notFound(`No open management key '${keyId}' in wallet '${id}' (it may be closed already).`);
    }
    return { id: keyId, object: 'management_key', closed: true };
  });
}
