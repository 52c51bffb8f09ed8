// GET /v1/generations/{id}: a call's usage record, for any API key of the wallet that made the call; 404 for
// an id this wallet never used, so another wallet's ids cannot be probed.
import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.ts';
import type { Db } from '../db/db.ts';
import type { Accounts } from '../money/accounts.ts';
import { findUsageRecord } from './records.ts';

interface UsageRouteDeps {
  accounts: Accounts;
  db: Db;
}

export function registerUsageRoutes(app: FastifyInstance, deps: UsageRouteDeps): void {
  app.get<{ Params: { id: string } }>('/v1/generations/:id', async (req) => {
    const caller = await deps.accounts.authenticate(req.headers, ['bearer', 'x-api-key']);
    const record = await findUsageRecord(deps.db, caller.walletId, req.params.id);
    if (!record)
      throw errors.notFound(`No call with id '${req.params.id}' was made from this wallet (records are kept 90 days by default).`);
    return record;
  });
}
