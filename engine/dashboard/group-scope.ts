// Teachers: managers an owner limited to some classes, who see and manage those classes' keys and usage and nothing
// else. The guard reads the manager's classes at every request, as it reads the role, so giving or taking a class
// holds at once.
import type { FastifyRequest } from 'fastify';
import { type Actor, recordAudit } from '../audit/trail.ts';
import { errors } from '../core/errors.ts';
import type { Db, Queryable } from '../db/db.ts';
import { requestSlot } from '../http/request-slots.ts';
import type { GroupScope } from '../keys/groups.ts';
import { moveStop } from '../keys/key-moves.ts';
import type { KeyChangeGuard } from '../keys/manage.ts';
import type { ApiKeyRecord } from '../keys/records.ts';
import { localeOf, type MessageKey, t } from './i18n.ts';
import type { OwnerSession } from './sessions.ts';

/** What a route names that must be one of the manager's: a key (its class), a class, or nothing. */
type Named = 'key' | 'group' | 'none';

/** The routes a manager limited to classes may use at all. Any other answers 403. */
const GROUP_SCOPED_ROUTES: Readonly<Record<string, Named>> = {
  'GET /dashboard': 'none',
  'GET /dashboard/keys': 'none',
  'GET /dashboard/keys/created': 'none',
  'GET /dashboard/keys/:id': 'none',
  'POST /dashboard/keys/:id': 'key',
  'GET /dashboard/keys/:id/close': 'key',
  'POST /dashboard/keys/:id/close': 'key',
  'GET /dashboard/groups': 'none',
  'GET /dashboard/groups/:id': 'group',
  'GET /dashboard/groups/:id/keys': 'group',
  'POST /dashboard/groups/:id/keys': 'group',
  'GET /dashboard/groups/:id/usage.csv': 'group',
  'POST /dashboard/sign-out': 'none',
  'GET /dashboard/*': 'none',
  'POST /dashboard/*': 'none',
};

const scopes = requestSlot<{ groups: GroupScope }>('group_scope');

/** The classes the request's manager is limited to, or null (the whole wallet, as the role allows). */
export const groupScopeOf = (req: FastifyRequest): GroupScope => scopes.get(req)?.groups ?? null;

/** Whether a teacher may open the route at all (everyone else: yes); for the nav, which offers only what opens. */
export const scopeAllows = (req: FastifyRequest, method: string, routeUrl: string): boolean =>
  groupScopeOf(req) === null || `${method} ${routeUrl}` in GROUP_SCOPED_ROUTES;

/**
 * The classes a manager is limited to: null for a manager never given one (the whole wallet, as the role allows),
 * else the classes they still have, none once all were taken away or deleted.
 */
export async function managerGroups(q: Queryable, walletId: string, identity: string): Promise<string[] | null> {
  const res = await q.query<{ group_id: string | null }>(
    `SELECT c.group_id FROM wallet_managers w
       LEFT JOIN (wallet_manager_groups c JOIN key_groups g ON g.id = c.group_id AND g.deleted_at IS NULL)
         ON c.wallet_id = w.wallet_id AND c.identity = w.identity
      WHERE w.wallet_id = $1 AND w.identity = $2 AND w.limited_to_classes
      ORDER BY c.group_id`,
    [walletId, identity],
  );
  if (res.rows.length === 0) return null;
  return res.rows.flatMap((r) => (r.group_id === null ? [] : [r.group_id]));
}

/** Reads the session's classes (a manager's only; the owner is never limited) and refuses what lies outside them. */
export async function checkGroupScope(req: FastifyRequest, db: Db, session: OwnerSession): Promise<void> {
  const groups = session.isManager ? await managerGroups(db, session.walletId, session.actorId) : null;
  scopes.set(req, { groups });
  if (groups === null) return;
  const refuse = () => errors.forbidden(t(localeOf(req), 'groups.refused'));
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  const named = GROUP_SCOPED_ROUTES[`${method} ${req.routeOptions.url ?? ''}`];
  // Not a class's key or page but the wallet's own (a class's limits, the wallet, usage, audit): the owner's to do.
  if (named === undefined) throw errors.forbidden(t(localeOf(req), 'groups.owner_only'));
  const id = (req.params as Record<string, string> | undefined)?.id ?? '';
  if (named === 'group' && !groups.includes(id)) throw refuse();
  if (named === 'key') {
    const res = await db.query<{ group_id: string | null }>(`SELECT group_id FROM api_keys WHERE id = $1 AND wallet_id = $2`, [
      id,
      session.walletId,
    ]);
    if (!groups.includes(res.rows[0]?.group_id ?? '')) throw refuse();
  }
}

// A teacher gives out student keys only: a teacher key lifts what the school refuses to students (callers.yaml),
// so it is the whole wallet's managers' to give. A key already a teacher's may keep its audience.
const givesTeacherKey = (asked: string | undefined, current: string | null) => asked?.trim() === 'teacher' && current !== 'teacher';

/** What a teacher may make on their class's page: student keys only. */
export function checkTeacherCreate(req: FastifyRequest, audience: string | undefined): void {
  if (groupScopeOf(req) !== null && givesTeacherKey(audience, null)) throw errors.forbidden(t(localeOf(req), 'groups.teacher_keys'));
}

/**
 * What a teacher may change of a key of their classes (the guard checked its class): not its audience to teacher,
 * and its class only to another of theirs (the rest of the rule: teacherMoveGuard).
 */
export function checkTeacherChange(req: FastifyRequest, form: Record<string, string>, key: TeacherKeyFacts): void {
  const scope = groupScopeOf(req);
  if (scope === null) return;
  const refuse = (message: MessageKey) => errors.forbidden(t(localeOf(req), message));
  if (givesTeacherKey(form.audience, key.audience)) throw refuse('groups.teacher_keys');
  const to = form.group_id?.trim();
  if (to !== undefined && to !== (key.group_id ?? '') && !scope.includes(to)) throw refuse('groups.refused');
}

type TeacherKeyFacts = Pick<ApiKeyRecord, 'id' | 'audience' | 'group_id'>;

/**
 * A teacher moves a key to another class only while it has spent nothing this month and holds nothing for calls in
 * progress, whether or not a class has a limit (keys/key-moves.ts): the classes' limits are the owner's.
 */
export function teacherMoveGuard(req: FastifyRequest, now: Date): KeyChangeGuard | undefined {
  if (groupScopeOf(req) === null) return undefined;
  return async (tx, current, input) => {
    const stop = await moveStop(tx, current, input.groupId, now, true);
    if (stop) throw errors.forbidden(t(localeOf(req), stop === 'busy' ? 'groups.busy_key_move' : 'groups.spent_key_move'));
  };
}

/** Gives a class to a manager (or takes it back), in the audit trail as a change of that manager. */
export async function setManagerGroup(
  db: Db,
  walletId: string,
  identity: string,
  groupId: string,
  give: boolean,
  actor: Actor,
  now: Date,
): Promise<void> {
  await db.transaction(async (tx) => {
    const before = await managerGroups(tx, walletId, identity);
    if (give) {
      const ok = await tx.query(
        `INSERT INTO wallet_manager_groups (wallet_id, identity, group_id)
         SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM wallet_managers WHERE wallet_id = $1 AND identity = $2)
            AND EXISTS (SELECT 1 FROM key_groups WHERE id = $3 AND wallet_id = $1 AND deleted_at IS NULL)
         ON CONFLICT DO NOTHING`,
        [walletId, identity, groupId],
      );
      if (ok.rowCount === 0 && !before?.includes(groupId)) throw errors.notFound(`No manager '${identity}' or class '${groupId}' here.`);
      // From the first class on, the manager stays limited to classes, even once they have none left.
      await tx.query(`UPDATE wallet_managers SET limited_to_classes = true WHERE wallet_id = $1 AND identity = $2`, [walletId, identity]);
    } else {
      await tx.query(`DELETE FROM wallet_manager_groups WHERE wallet_id = $1 AND identity = $2 AND group_id = $3`, [
        walletId,
        identity,
        groupId,
      ]);
    }
    const after = await managerGroups(tx, walletId, identity);
    if (JSON.stringify(before) === JSON.stringify(after)) return;
    await recordAudit(
      tx,
      actor,
      { walletId, action: 'manager.changed', targetId: identity, before: { groups: before }, after: { groups: after } },
      now,
    );
  });
}
