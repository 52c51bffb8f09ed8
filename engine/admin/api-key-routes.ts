// POST /admin/v1/wallets/{id}/keys: an API key made by the operator (`gateway key create`), so a wallet made on the
// command line gets its first key without a management key and a curl to the key doors. It runs inside the admin
// scope, behind its token check and error handler.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiKeyRecord } from '../keys/records.ts';

interface ApiKeyRouteDeps {
  /** The wallet, or 404 not_found_error. */
  requireWallet: (id: string) => Promise<unknown>;
  /** keys/manage.ts createOperatorKey over this gateway's key service. */
  createApiKey: (walletId: string, body: unknown, req: FastifyRequest) => Promise<ApiKeyRecord>;
}

export function registerApiKeyRoute(scope: FastifyInstance, deps: ApiKeyRouteDeps): void {
  scope.post<{ Params: { id: string } }>('/admin/v1/wallets/:id/keys', async (req, reply) => {
    await deps.requireWallet(req.params.id);
    return reply.code(201).send(await deps.createApiKey(req.params.id, req.body ?? {}, req));
  });
}
