// The operator in the audit trail, and the trail as the operator reads it. A request made with this start's local
// token comes from the CLI on this machine, so it is recorded as `cli` with no address, as the CLI writing to
// PostgreSQL itself is.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { listAudit, parseAuditQuery } from '../audit/query.ts';
import { type Actor, type AuditChange, CLI_OPERATOR, requestOrigin } from '../audit/trail.ts';
import type { Db } from '../db/db.ts';
import { tokenMatches } from './admin-token.ts';

export function operatorActor(req: FastifyRequest, localToken: string | undefined): Actor {
  const m = /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? '').trim());
  if (localToken && m && tokenMatches(m[1]!.trim(), localToken)) return CLI_OPERATOR;
  return { kind: 'operator', id: 'admin_api', ...requestOrigin(req) };
}

/** The audit change of a top-up: the lot made and what it holds. */
export const creditsAdded = (
  walletId: string,
  lot: { id: string; vendors: string[] | null; expiresAt?: Date | null; label?: string | null },
  credits: number,
): AuditChange => ({
  walletId,
  action: 'credits.added',
  targetId: lot.id,
  before: null,
  // A lot that expires says when, and one named says its name; others keep the record as it was.
  after: {
    credits,
    vendors: lot.vendors,
    ...(lot.expiresAt ? { expires_at: lot.expiresAt.toISOString() } : {}),
    ...(lot.label ? { label: lot.label } : {}),
  },
});

export const ownerChanged = (walletId: string, previousOwnerId: string, ownerId: string): AuditChange => ({
  walletId,
  action: 'owner.changed',
  targetId: null,
  before: { owner_id: previousOwnerId },
  after: { owner_id: ownerId },
});

export function registerAuditRoute(scope: FastifyInstance, deps: { db: Db; requireWallet: (id: string) => Promise<unknown> }): void {
  scope.get<{ Params: { id: string } }>('/admin/v1/wallets/:id/audit', async (req) => {
    await deps.requireWallet(req.params.id);
    return { object: 'list', ...(await listAudit(deps.db, req.params.id, parseAuditQuery(req.query))) };
  });
}
