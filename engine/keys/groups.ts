// Key groups (a school's classes), as the doors and the dashboard change them. A change is announced to every
// process so a raised limit lifts a 429 at once; deleting a group with active keys is refused (409), since its
// limits are what keeps those keys within the class's budget.

import { type Actor, changedFields, recordAudit } from '../audit/trail.ts';
import { type Clock, koreanDate } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import type { Db, Queryable } from '../db/db.ts';
import { groupUsage } from './group-quota.ts';
import type { GroupInput } from './group-validate.ts';
import { newGroupId } from './secret.ts';
import type { Announced, KeyService } from './service.ts';
import { activeWhere, doorKeyWhere } from './store.ts';
import { usedCredits } from './types.ts';
import type { KeyUsage } from './use-cache.ts';
import { checkLimits } from './validate.ts';

interface GroupDeps {
  keys: KeyService;
  db: Db;
  clock: Clock;
}

/** Which groups the caller may see: null for the whole wallet, else a teacher's groups. */
export type GroupScope = readonly string[] | null;

export interface KeyGroupRecord {
  object: 'key_group';
  id: string;
  name: string;
  monthly_limit_credits: number | null;
  daily_limit_credits: number | null;
  month_used_credits: number;
  day_used_credits: number;
  /** Active keys in the group. */
  key_count: number;
  created_at: string;
}

interface GroupRow {
  id: string;
  name: string;
  monthly: number | null;
  daily: number | null;
  createdAt: Date;
  keyCount: number;
}

const COLUMNS = (today: string) => `g.id, g.name, g.monthly_limit_credits::text AS monthly, g.daily_limit_credits::text AS daily,
  g.created_at, (SELECT count(*) FROM api_keys k WHERE k.group_id = g.id AND ${doorKeyWhere} AND ${activeWhere(`'${today}'`)})::int AS key_count`;

const rowFrom = (r: Record<string, unknown>): GroupRow => ({
  id: String(r.id),
  name: String(r.name),
  monthly: r.monthly == null ? null : Number(r.monthly),
  daily: r.daily == null ? null : Number(r.daily),
  createdAt: r.created_at instanceof Date ? r.created_at : new Date(String(r.created_at)),
  keyCount: Number(r.key_count),
});

const groupState = (g: GroupRow) => ({ name: g.name, monthly_limit_credits: g.monthly, daily_limit_credits: g.daily });

const record = (g: GroupRow, u: KeyUsage | undefined): KeyGroupRecord => ({
  object: 'key_group',
  id: g.id,
  name: g.name,
  monthly_limit_credits: g.monthly,
  daily_limit_credits: g.daily,
  month_used_credits: usedCredits(u?.monthNano ?? 0n),
  day_used_credits: usedCredits(u?.dayNano ?? 0n),
  key_count: g.keyCount,
  created_at: g.createdAt.toISOString(),
});

export const groupNotFound = (id: string) => errors.notFound(`No key group with id '${id}' in this wallet.`);

const inScope = (scope: GroupScope, id: string) => scope === null || scope.includes(id);

/** One of the wallet's groups (null when it is another wallet's, deleted or unknown). */
export async function findGroup(q: Queryable, walletId: string, id: string, today: string, forUpdate = false): Promise<GroupRow | null> {
  const res = await q.query(
    `SELECT ${COLUMNS(today)} FROM key_groups g WHERE g.id = $1 AND g.wallet_id = $2 AND g.deleted_at IS NULL${forUpdate ? ' FOR UPDATE' : ''}`,
    [id, walletId],
  );
  return res.rows[0] ? rowFrom(res.rows[0]) : null;
}

async function render(deps: GroupDeps, rows: GroupRow[], now: Date): Promise<KeyGroupRecord[]> {
  const usage = await groupUsage(
    deps.db,
    rows.map((g) => g.id),
    now,
  );
  return rows.map((g) => record(g, usage.get(g.id)));
}

/**
 * Refuses a name another live class of the wallet has (case and surrounding spaces aside): the owner picks a
 * class by its name in every list and filter. Creates and renames of one wallet take turns on a lock, so two at
 * once cannot both pass.
 */
async function checkNameFree(tx: Queryable, walletId: string, name: string, exceptId: string | null): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('gateway.key_groups.name.' || $1::text))`, [walletId]);
  const res = await tx.query(
    `SELECT 1 FROM key_groups WHERE wallet_id = $1 AND deleted_at IS NULL AND lower(name) = lower($2) AND id IS DISTINCT FROM $3 LIMIT 1`,
    [walletId, name, exceptId],
  );
  if (res.rows.length > 0) {
    throw errors.invalidRequest(`name '${name}' is already another group's in this wallet; choose a name no other group has.`, 'name');
  }
}

/** The names of these groups of the wallet, deleted ones too (the audit trail still speaks of them). */
export async function groupNames(q: Queryable, walletId: string, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const res = await q.query<{ id: string; name: string }>(`SELECT id, name FROM key_groups WHERE wallet_id = $1 AND id = ANY($2::text[])`, [
    walletId,
    [...ids],
  ]);
  return new Map(res.rows.map((r) => [r.id, r.name]));
}

/** A group a key may be put in, by id and name. */
export interface GroupChoice {
  id: string;
  name: string;
}

/** The wallet's live groups (a teacher's only) by id and name, oldest first: the classes a key may be put in. */
export async function groupChoices(q: Queryable, walletId: string, scope: GroupScope = null): Promise<GroupChoice[]> {
  const res = await q.query<GroupChoice>(
    `SELECT id, name FROM key_groups WHERE wallet_id = $1 AND deleted_at IS NULL ORDER BY created_at, seq`,
    [walletId],
  );
  return res.rows.filter((g) => inScope(scope, g.id));
}

/** The wallet's groups (a teacher's only), oldest first, with their keys' use today and this month. */
export async function listGroups(deps: GroupDeps, walletId: string, scope: GroupScope = null): Promise<KeyGroupRecord[]> {
  const now = deps.clock.now();
  const res = await deps.db.query(
    `SELECT ${COLUMNS(koreanDate(now))} FROM key_groups g WHERE g.wallet_id = $1 AND g.deleted_at IS NULL ORDER BY g.created_at, g.seq`,
    [walletId],
  );
  return render(
    deps,
    res.rows.map(rowFrom).filter((g) => inScope(scope, g.id)),
    now,
  );
}

export async function getGroup(deps: GroupDeps, walletId: string, id: string, scope: GroupScope = null): Promise<KeyGroupRecord> {
  const now = deps.clock.now();
  const g = inScope(scope, id) ? await findGroup(deps.db, walletId, id, koreanDate(now)) : null;
  if (!g) throw groupNotFound(id);
  return (await render(deps, [g], now))[0]!;
}

export async function createGroup(
  deps: GroupDeps,
  walletId: string,
  input: GroupInput & { name: string },
  actor: Actor,
): Promise<KeyGroupRecord> {
  const now = deps.clock.now();
  const g = await deps.db.transaction(async (tx) => {
    if (input.distinctName) await checkNameFree(tx, walletId, input.name, null);
    const res = await tx.query(
      `INSERT INTO key_groups AS g (id, wallet_id, name, monthly_limit_credits, daily_limit_credits, created_at)
       VALUES ($1, $2, $3, $4::bigint, $5::bigint, $6::timestamptz) RETURNING ${COLUMNS(koreanDate(now))}`,
      [newGroupId(), walletId, input.name, input.monthlyLimitCredits ?? null, input.dailyLimitCredits ?? null, now.toISOString()],
    );
    const made = rowFrom(res.rows[0]!);
    await recordAudit(tx, actor, { walletId, action: 'key_group.created', targetId: made.id, before: null, after: groupState(made) }, now);
    return made;
  });
  return record(g, undefined);
}

/** Changes name or limits (only the fields sent); announced, so every process's next call of its keys counts it. */
export async function patchGroup(
  deps: GroupDeps,
  walletId: string,
  id: string,
  input: GroupInput,
  actor: Actor,
  scope: GroupScope = null,
): Promise<KeyGroupRecord> {
  const now = deps.clock.now();
  const today = koreanDate(now);
  let announced: Announced | undefined;
  const g = await deps.db.transaction(async (tx) => {
    const current = inScope(scope, id) ? await findGroup(tx, walletId, id, today, true) : null;
    if (!current) throw groupNotFound(id);
    const monthly = input.monthlyLimitCredits !== undefined ? input.monthlyLimitCredits : current.monthly;
    const daily = input.dailyLimitCredits !== undefined ? input.dailyLimitCredits : current.daily;
    checkLimits(monthly, daily);
    if (input.distinctName && input.name !== undefined && input.name !== current.name) await checkNameFree(tx, walletId, input.name, id);
    const res = await tx.query(
      `UPDATE key_groups g SET name = $2, monthly_limit_credits = $3::bigint, daily_limit_credits = $4::bigint
        WHERE g.id = $1 RETURNING ${COLUMNS(today)}`,
      [id, input.name ?? current.name, monthly, daily],
    );
    const changed = rowFrom(res.rows[0]!); // the row locked above
    const diff = changedFields(groupState(current), groupState(changed));
    if (Object.keys(diff.after).length === 0) return changed;
    await recordAudit(tx, actor, { walletId, action: 'key_group.changed', targetId: id, ...diff }, now);
    announced = await deps.keys.announce([`wallet:${walletId}`], tx);
    return changed;
  });
  await announced?.applied();
  return (await render(deps, [g], now))[0]!;
}

/** Deletes a group without active keys; 409 naming how many keys it still has otherwise. */
export async function deleteGroup(deps: GroupDeps, walletId: string, id: string, actor: Actor, scope: GroupScope = null): Promise<void> {
  const now = deps.clock.now();
  const announced = await deps.db.transaction(async (tx) => {
    const current = inScope(scope, id) ? await findGroup(tx, walletId, id, koreanDate(now), true) : null;
    if (!current) throw groupNotFound(id);
    if (current.keyCount > 0) {
      throw errors.conflict(
        `Key group '${current.name}' still has ${current.keyCount} active key${current.keyCount === 1 ? '' : 's'}: ` +
          `move them to another group or out of any (PATCH /v1/keys/{id} with group_id), or close them, then delete the group.`,
        { key_count: current.keyCount },
      );
    }
    // Closed keys keep their group id: their past use stays the group's in the usage pages.
    await tx.query(`UPDATE key_groups SET deleted_at = $2::timestamptz WHERE id = $1`, [id, now.toISOString()]);
    await recordAudit(tx, actor, { walletId, action: 'key_group.deleted', targetId: id, before: groupState(current), after: null }, now);
    return deps.keys.announce([`wallet:${walletId}`], tx);
  });
  await announced.applied();
}
