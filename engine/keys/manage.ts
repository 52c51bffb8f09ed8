// What an owner may do to the wallet's keys, as one set of functions that the key doors and the dashboard both
// call, so numbering, slot checks, limits and closing behave the same whichever way the owner comes. Each change is
// in the wallet's audit trail, in its own transaction.

import { type Actor, changedFields, recordAudit } from '../audit/trail.ts';
import { type Clock, koreanDate } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import type { Db, Queryable } from '../db/db.ts';
import { findGroup, groupNotFound } from './groups.ts';
import { moveRefused, moveStop } from './key-moves.ts';
import { closeManagementKey as closeOpenManagementKey, listManagementKeys as listAllManagementKeys } from './management-keys.ts';
import { moveMarks } from './moving-keys.ts';
import { type ApiKeyRecord, keyRecord } from './records.ts';
import { newRequestId } from './secret.ts';
import type { Announced, KeyService } from './service.ts';
import { activeWhere, countSlotKeys, doorKeyWhere, getDoorKey, getWallet, insertKey, type WalletInfo } from './store.ts';
import { KEY_COLUMNS, type KeyRow, keyRowFrom } from './types.ts';
import { type CreateInput, checkAudienceForWallet, checkLimits, keyNames, type PatchInput, parseCreate } from './validate.ts';

interface KeyManagementDeps {
  keys: KeyService;
  db: Db;
  clock: Clock;
}

interface KeyList {
  data: ApiKeyRecord[];
  total: number;
}

/** A management key as its owner sees it: never the secret. */
interface ManagementKeyView {
  id: string;
  name: string | null;
  key_prefix: string;
  created_at: string;
  last_used_at: string | null;
}

/** What the audit trail keeps of a key: its settings and shown prefix, never its secret. */
const keyState = (row: KeyRow) => ({
  name: row.name,
  key_prefix: row.keyPrefix,
  audience: row.audience,
  monthly_limit_credits: row.monthlyLimitCredits,
  daily_limit_credits: row.dailyLimitCredits,
  expires_on: row.expiresOn,
  models: row.models,
  group_id: row.groupId,
});

const notFound = (id: string) => errors.keyNotFound(`No key with id '${id}' in this wallet (it may be closed).`);

export async function walletForKeys(db: Db, walletId: string): Promise<WalletInfo> {
  const w = await getWallet(db, walletId);
  if (!w) throw errors.authentication('The wallet of this key no longer exists.');
  return w;
}

async function render(deps: KeyManagementDeps, rows: KeyRow[], wallet: WalletInfo, now: Date): Promise<ApiKeyRecord[]> {
  const usage = await deps.keys.quota.usage(
    rows.map((r) => r.id),
    now,
  );
  return rows.map((row) =>
    keyRecord(row, { splitsUsage: wallet.splitsUsage, usage: usage.get(row.id), lastUsedAt: deps.keys.pendingLastUsed(row.id) }),
  );
}

/**
 * The wallet's active API keys, newest first, with use today and this month; `groupIds`: only the keys of those
 * groups (a teacher's classes, or one class's page), or `'none'` for the keys in no group, `total` then counting
 * those.
 */
export async function listKeys(
  deps: KeyManagementDeps,
  walletId: string,
  page: { limit: number; offset: number; groupIds?: readonly string[] | 'none' },
): Promise<KeyList> {
  const { db, clock } = deps;
  const now = clock.now();
  const today = koreanDate(now);
  const wallet = await walletForKeys(db, walletId);
  const listed = Array.isArray(page.groupIds);
  const inGroups = listed ? 'AND k.group_id = ANY($5::text[])' : page.groupIds === 'none' ? 'AND k.group_id IS NULL' : '';
  const params = [wallet.id, today, page.limit, page.offset, ...(listed ? [page.groupIds] : [])];
  const res = await db.query(
    `SELECT ${KEY_COLUMNS}, count(*) OVER () AS total_count FROM api_keys k
      WHERE k.wallet_id = $1 AND ${doorKeyWhere} AND ${activeWhere('$2')} ${inGroups}
      ORDER BY k.created_at DESC, k.seq DESC
      LIMIT $3 OFFSET $4`,
    params,
  );
  const counted = res.rows[0] ? Number(res.rows[0].total_count) : null;
  const total = counted ?? (page.groupIds ? 0 : await countSlotKeys(db, wallet.id, today));
  return { data: await render(deps, res.rows.map(keyRowFrom), wallet, now), total };
}

export async function getKey(deps: KeyManagementDeps, walletId: string, id: string): Promise<ApiKeyRecord> {
  const now = deps.clock.now();
  const wallet = await walletForKeys(deps.db, walletId);
  const row = await getDoorKey(deps.db, wallet.id, id, koreanDate(now));
  if (!row) throw notFound(id);
  return (await render(deps, [row], wallet, now))[0]!;
}

/**
 * The slot check after a create's insert, serialised per wallet by a transaction-scoped advisory lock: a request
 * that finds the wallet past its slots closes every key it made and answers 409. Each winner saw a count within
 * the slots that already included every key committed before it, so the end state never exceeds the slots.
 */
async function checkSlotsAfterInsert(
  deps: KeyManagementDeps,
  walletId: string,
  requestId: string,
  madeCount: number,
  actor: Actor,
  now: Date,
) {
  const { db, keys } = deps;
  const today = koreanDate(now);
  let lost: { ids: string[]; slots: number; announced: Announced } | null;
  try {
    lost = await db.transaction(async (tx) => {
      // A per-wallet advisory lock (not a wallets row lock, so the ledger's balance updates never wait on it).
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('gateway.key_slots.' || $1))`, [walletId]);
      const w = await getWallet(tx, walletId);
      const n = await countSlotKeys(tx, walletId, today);
      if (w && n <= w.keySlots) return null;
      const res = await tx.query<{ id: string }>(
        `UPDATE api_keys SET closed_at = $2::timestamptz, closed_reason = 'slot_race'
          WHERE create_request_id = $1 AND closed_at IS NULL RETURNING id`,
        [requestId, now.toISOString()],
      );
      const ids = res.rows.map((r) => r.id);
      for (const id of ids) {
        const change = {
          walletId,
          action: 'key.closed',
          targetId: id,
          before: { status: 'active' },
          after: { status: 'closed', reason: 'slot_race' },
        } as const;
        await recordAudit(tx, actor, change, now);
      }
      return { ids, slots: w?.keySlots ?? 0, announced: await keys.announce(ids, tx) };
    });
    await lost?.announced.applied();
  } catch (e) {
    // Could not verify the slots: take this request's keys back rather than risk passing them.
    await db
      .query(
        `UPDATE api_keys SET closed_at = $2::timestamptz, closed_reason = 'slot_check_failed'
          WHERE create_request_id = $1 AND closed_at IS NULL`,
        [requestId, now.toISOString()],
      )
      .catch(() => undefined);
    throw e;
  }
  if (lost) {
    throw errors.conflict(
      `Concurrent requests pushed the wallet past its ${lost.slots} key slots; the ${madeCount} ` +
        `key${madeCount === 1 ? '' : 's'} made by this request ${madeCount === 1 ? 'was' : 'were'} closed. Retry the call.`,
      { closed_key_ids: lost.ids },
    );
  }
}

/**
 * Makes `input.count` keys (numbered names from a prefix) in one transaction, all or none; each record
 * carries its full key, shown this once. 400 when the slots cannot hold them; 409 when concurrent creates
 * pushed the wallet past its slots (this request's keys are closed again).
 */
export async function createKeys(deps: KeyManagementDeps, walletId: string, input: CreateInput, actor: Actor): Promise<ApiKeyRecord[]> {
  const { db, clock } = deps;
  const now = clock.now();
  const today = koreanDate(now);
  const wallet = await walletForKeys(db, walletId);
  checkAudienceForWallet(input.audience, wallet.splitsUsage);
  const audience = wallet.splitsUsage ? (input.audience ?? 'student') : null;

  if (input.groupId !== null && !(await findGroup(db, wallet.id, input.groupId, today))) throw groupNotFound(input.groupId);
  const active = await countSlotKeys(db, wallet.id, today);
  if (active + input.count > wallet.keySlots) {
    const free = Math.max(0, wallet.keySlots - active);
    throw errors.invalidRequest(
      `Not enough key slots: the wallet has ${free} free of ${wallet.keySlots}, and ${input.count} ` +
        `key${input.count === 1 ? ' was' : 's were'} asked. No key was created.`,
      'count',
    );
  }

  // All keys of one request in one transaction: all or none (so `incomplete: true` never arises).
  const requestId = newRequestId();
  const made = await db.transaction(async (tx) => {
    const out: { row: KeyRow; key: string }[] = [];
    for (const name of keyNames(input)) {
      out.push(
        await insertKey(tx, {
          walletId: wallet.id,
          kind: 'api',
          name,
          audience,
          monthlyLimitCredits: input.monthlyLimitCredits,
          dailyLimitCredits: input.dailyLimitCredits,
          expiresOn: input.expiresOn,
          models: input.models,
          groupId: input.groupId,
          createRequestId: requestId,
          createdAt: now,
        }),
      );
    }
    for (const { row } of out) {
      await recordAudit(
        tx,
        actor,
        { walletId: wallet.id, action: 'key.created', targetId: row.id, before: null, after: keyState(row) },
        now,
      );
    }
    return out;
  });

  await checkSlotsAfterInsert(deps, wallet.id, requestId, made.length, actor, now);
  return made.map(({ row, key }) => keyRecord(row, { splitsUsage: wallet.splitsUsage, key }));
}

/**
 * One API key made by the operator (`gateway key create`, POST /admin/v1/wallets/{id}/keys): the body of a key
 * door's create without `count`, checked and limited the same way, so an operator's key is an owner's key.
 */
export async function createOperatorKey(deps: KeyManagementDeps, walletId: string, raw: unknown, actor: Actor): Promise<ApiKeyRecord> {
  if (raw !== null && typeof raw === 'object' && Object.hasOwn(raw, 'count')) {
    throw errors.invalidRequest('count is not taken here: the operator makes one key per call.', 'count');
  }
  const [record] = await createKeys(deps, walletId, parseCreate(raw, koreanDate(deps.clock.now())), actor);
  return record!; // count is 1
}

/** A condition of a change, decided in its transaction with the key's row locked (a reserve of a capped key waits). */
export type KeyChangeGuard = (tx: Queryable, current: KeyRow, input: PatchInput) => Promise<void>;

/**
 * Changes name, audience, limits, expiry or models; announced in the same transaction, so it holds at once
 * everywhere, and recorded there in the audit trail (the fields that changed; nothing when none did). `guard` decides
 * first, once the key's row is locked; a move to another class then follows key-moves.ts.
 */
export async function patchKey(
  deps: KeyManagementDeps,
  walletId: string,
  id: string,
  input: PatchInput,
  actor: Actor,
  guard?: KeyChangeGuard,
): Promise<ApiKeyRecord> {
  const { db, keys, clock } = deps;
  const now = clock.now();
  const today = koreanDate(now);
  const wallet = await walletForKeys(db, walletId);
  // A move is decided on what the key's calls hold: every process first stops admitting the key's calls and tells
  // what those admitted hold (moving-keys.ts); the move's own change, or its refusal, lets them go on.
  const mark = input.groupId === undefined ? null : moveMarks(id);
  if (mark) await (await keys.announce([mark.start])).applied();
  let announced: Announced | undefined;
  const change = db.transaction(async (tx) => {
    const current = await getDoorKey(tx, wallet.id, id, today, true);
    if (!current) throw notFound(id);
    await guard?.(tx, current, input);
    const stop = await moveStop(tx, current, input.groupId, now, false);
    if (stop) throw moveRefused(stop);
    const sets: string[] = [];
    const params: unknown[] = [id];
    const set = (column: string, value: unknown, cast = '') => {
      params.push(value);
      sets.push(`${column} = $${params.length}${cast}`);
    };
    if (input.audience !== undefined) {
      checkAudienceForWallet(input.audience, wallet.splitsUsage);
      if (wallet.splitsUsage && input.audience === null) {
        throw errors.invalidRequest(`audience must be 'student' or 'teacher' for a wallet that splits usage.`, 'audience');
      }
      set('audience', wallet.splitsUsage ? input.audience : null);
    }
    const monthly = input.monthlyLimitCredits !== undefined ? input.monthlyLimitCredits : current.monthlyLimitCredits;
    const daily = input.dailyLimitCredits !== undefined ? input.dailyLimitCredits : current.dailyLimitCredits;
    checkLimits(monthly, daily);
    if (input.name !== undefined) set('name', input.name);
    if (input.monthlyLimitCredits !== undefined) set('monthly_limit_credits', input.monthlyLimitCredits, '::bigint');
    if (input.dailyLimitCredits !== undefined) set('daily_limit_credits', input.dailyLimitCredits, '::bigint');
    if (input.expiresOn !== undefined) set('expires_on', input.expiresOn, '::date');
    if (input.models !== undefined) set('models', input.models, '::text[]');
    if (input.groupId !== undefined) {
      // Another wallet's group, or a deleted one, is not there to join (404), as another wallet's key is not.
      if (input.groupId !== null && !(await findGroup(tx, wallet.id, input.groupId, today, true))) throw groupNotFound(input.groupId);
      set('group_id', input.groupId);
    }
    if (sets.length === 0) return current;
    const res = await tx.query(`UPDATE api_keys k SET ${sets.join(', ')} WHERE k.id = $1 RETURNING ${KEY_COLUMNS}`, params);
    const changed = keyRowFrom(res.rows[0]!); // the key read above
    const diff = changedFields(keyState(current), keyState(changed));
    if (Object.keys(diff.after).length > 0)
      await recordAudit(tx, actor, { walletId: wallet.id, action: 'key.changed', targetId: id, ...diff }, now);
    announced = await keys.announce([id], tx);
    return changed;
  });
  try {
    const row = await change;
    await announced?.applied();
    return (await render(deps, [row], wallet, now))[0]!;
  } finally {
    // Only once the change committed, or failed, may the key's calls go on: each then reads the key as it now is.
    if (mark) await (await keys.announce([mark.end])).applied();
  }
}

/** Closes one of the wallet's active API keys at once (404 when it is not one). */
export async function closeApiKey(deps: KeyManagementDeps, walletId: string, id: string, actor: Actor): Promise<void> {
  const { db, keys, clock } = deps;
  const now = clock.now();
  const closed = await db.transaction(async (tx) => {
    const res = await tx.query(
      `UPDATE api_keys k SET closed_at = $4::timestamptz, closed_reason = 'deleted'
        WHERE k.id = $1 AND k.wallet_id = $2 AND ${doorKeyWhere} AND ${activeWhere('$3')}
        RETURNING k.name, k.key_prefix`,
      [id, walletId, koreanDate(now), now.toISOString()],
    );
    if (res.rows.length === 0) return null;
    const { name, key_prefix } = res.rows[0] as { name: string | null; key_prefix: string };
    const change = {
      walletId,
      action: 'key.closed',
      targetId: id,
      before: { status: 'active', name, key_prefix },
      after: { status: 'closed' },
    } as const;
    await recordAudit(tx, actor, change, now);
    return keys.announce([id], tx);
  });
  if (!closed) throw notFound(id);
  await closed.applied();
}

/** The wallet's management keys that work (open, made by its current owner), newest first: the operator's list, active only. */
export async function listManagementKeys(db: Db, walletId: string): Promise<ManagementKeyView[]> {
  const all = await listAllManagementKeys(db, walletId);
  return all
    .filter((k) => k.status === 'active')
    .reverse()
    .map((k) => ({ id: k.id, name: k.name, key_prefix: k.key_prefix, created_at: k.created_at, last_used_at: k.last_used_at }));
}

/** Closes one of the wallet's open management keys (404 when it is not one). */
export async function closeManagementKey(deps: Pick<KeyManagementDeps, 'keys'>, walletId: string, id: string, actor: Actor): Promise<void> {
  if (!(await closeOpenManagementKey(deps.keys, walletId, id, actor)))
    throw errors.notFound(`No open management key with id '${id}' in this wallet.`);
}

/** Names of the wallet's keys by id, closed ones included (the usage page names past keys too). */
export async function keyNamesById(db: Db, walletId: string): Promise<Map<string, { name: string | null; prefix: string }>> {
  const res = await db.query<{ id: string; name: string | null; key_prefix: string }>(
    `SELECT id, name, key_prefix FROM api_keys WHERE wallet_id = $1 AND kind = 'api'`,
    [walletId],
  );
  return new Map(res.rows.map((r) => [r.id, { name: r.name, prefix: r.key_prefix }]));
}
