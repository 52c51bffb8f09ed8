// The key doors: GET /v1/key (normal key) and the five key-management doors (management key only).
//
// Choices the public contract leaves open (documented in engine/keys/README.md):
// - Error bodies use the chat-completions shape.
// - A fully successful create answers 201 `{object: 'list', data: [records with key], incomplete: false}`.
// - DELETE answers 200 `{id, object: 'api_key', deleted: true}`.
// - The doors see normal API keys only: management keys and people's chat keys are neither listed nor
//   counted in slots, and their ids answer 404.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.ts';
import { koreanDate } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import { errors } from '../core/errors.ts';
import { installErrorHandler } from '../http/reply-error.ts';
import { newRequestId } from './secret.ts';
import { keyFromHeaders, type KeyService } from './service.ts';
import { KEY_COLUMNS, keyRowFrom, type AuthContext, type KeyRow } from './types.ts';
import { keyRecord } from './records.ts';
import { activeWhere, countSlotKeys, doorKeyWhere, getDoorKey, getWallet, insertKey, type WalletInfo } from './store.ts';
import { checkAudienceForWallet, checkLimits, keyNames, parseCreate, parseListQuery, parsePatch } from './validate.ts';

export interface KeyRouteDeps {
  keys: KeyService;
  db: Db;
  clock: Clock;
}


/** Registers the key doors in their own encapsulated scope (own JSON parser and error handler). */
export async function registerKeyRoutes(app: FastifyInstance, deps: KeyRouteDeps): Promise<void> {
  await app.register(async (scope) => {
    const { keys, db, clock } = deps;

    // Empty bodies are fine (DELETE with a JSON content type); malformed JSON is 400 in the chat shape.
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, raw, done) => {
      const text = String(raw);
      if (text.trim() === '') return done(null, undefined);
      try {
        done(null, JSON.parse(text));
      } catch {
        done(errors.invalidRequest('The request body is not valid JSON.'), undefined);
      }
    });

    installErrorHandler(scope);

    const management = (headers: Record<string, string | string[] | undefined>) =>
      keys.authenticate(keyFromHeaders(headers, { allowXApiKey: false }), 'management');

    async function walletOf(auth: AuthContext): Promise<WalletInfo> {
      const w = await getWallet(db, auth.walletId);
      if (!w) throw errors.authentication('The wallet of this key no longer exists.');
      return w;
    }

    // The doors with a body check the management key before reading it, so no key means no body read.
    const managementFirst = {
      onRequest: async (req: FastifyRequest) => {
        await management(req.headers);
      },
    };

    const notFound = (id: string) => errors.notFound(`No key with id '${id}' in this wallet (it may be closed).`);

    const render = async (rows: KeyRow[], wallet: WalletInfo, now: Date) => {
      const usage = await keys.quota.usage(rows.map((r) => r.id), now);
      return rows.map((row) =>
        keyRecord(row, { splitsUsage: wallet.splitsUsage, usage: usage.get(row.id), lastUsedAt: keys.pendingLastUsed(row.id) }),
      );
    };

    // GET /v1/key: the calling key's quota status. Normal key; no charge.
    scope.get('/v1/key', async (req) => {
      const auth = await keys.authenticate(keyFromHeaders(req.headers, { allowXApiKey: false }), 'api');
      return keys.quota.keyStatus(auth, clock.now());
    });

    scope.get('/v1/keys', async (req) => {
      const auth = await management(req.headers);
      const { limit, offset } = parseListQuery(req.query);
      const now = clock.now();
      const today = koreanDate(now);
      const wallet = await walletOf(auth);
      const total = await countSlotKeys(db, wallet.id, today);
      const res = await db.query(
        `SELECT ${KEY_COLUMNS} FROM api_keys k
          WHERE k.wallet_id = $1 AND ${doorKeyWhere} AND ${activeWhere('$2')}
          ORDER BY k.created_at DESC, k.seq DESC
          LIMIT $3 OFFSET $4`,
        [wallet.id, today, limit, offset],
      );
      const data = await render(res.rows.map(keyRowFrom), wallet, now);
      return { object: 'list', data, total, has_more: offset + data.length < total };
    });

    scope.post('/v1/keys', managementFirst, async (req, reply) => {
      const auth = await management(req.headers);
      const now = clock.now();
      const today = koreanDate(now);
      const input = parseCreate(req.body, today);
      const wallet = await walletOf(auth);
      checkAudienceForWallet(input.audience, wallet.splitsUsage);
      const audience = wallet.splitsUsage ? (input.audience ?? 'student') : null;

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
              createRequestId: requestId,
              createdAt: now,
            }),
          );
        }
        return out;
      });

      // Check after insert, serialised per wallet by a transaction-scoped advisory lock: a request that finds the wallet
      // past its slots closes every key it made and answers 409. Each winner saw a count within the slots
      // that already included every key committed before it, so the end state never exceeds the slots.
      let lost: { ids: string[]; slots: number } | null;
      try {
        lost = await db.transaction(async (tx) => {
          // A per-wallet advisory lock (not a wallets row lock, so the ledger's balance updates never wait on it).
          await tx.query(`SELECT pg_advisory_xact_lock(hashtext('gateway.key_slots.' || $1))`, [wallet.id]);
          const w = await getWallet(tx, wallet.id);
          const n = await countSlotKeys(tx, wallet.id, today);
          if (w && n <= w.keySlots) return null;
          const res = await tx.query<{ id: string }>(
            `UPDATE api_keys SET closed_at = $2::timestamptz, closed_reason = 'slot_race'
              WHERE create_request_id = $1 AND closed_at IS NULL RETURNING id`,
            [requestId, now.toISOString()],
          );
          const ids = res.rows.map((r) => r.id);
          await keys.announce(ids, tx);
          return { ids, slots: w?.keySlots ?? 0 };
        });
        if (lost) keys.forget(lost.ids);
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
          `Concurrent requests pushed the wallet past its ${lost.slots} key slots; the ${made.length} ` +
            `key${made.length === 1 ? '' : 's'} made by this request ${made.length === 1 ? 'was' : 'were'} closed. Retry the call.`,
          { closed_key_ids: lost.ids },
        );
      }

      const data = made.map(({ row, key }) => keyRecord(row, { splitsUsage: wallet.splitsUsage, key }));
      return reply.code(201).send({ object: 'list', data, incomplete: false });
    });

    scope.get<{ Params: { id: string } }>('/v1/keys/:id', async (req) => {
      const auth = await management(req.headers);
      const now = clock.now();
      const wallet = await walletOf(auth);
      const row = await getDoorKey(db, wallet.id, req.params.id, koreanDate(now));
      if (!row) throw notFound(req.params.id);
      return (await render([row], wallet, now))[0];
    });

    scope.patch<{ Params: { id: string } }>('/v1/keys/:id', managementFirst, async (req) => {
      const auth = await management(req.headers);
      const now = clock.now();
      const today = koreanDate(now);
      const input = parsePatch(req.body, today);
      const wallet = await walletOf(auth);
      const id = req.params.id;

      const row = await db.transaction(async (tx) => {
        const current = await getDoorKey(tx, wallet.id, id, today, true);
        if (!current) throw notFound(id);
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
        if (sets.length === 0) return current;
        const res = await tx.query(`UPDATE api_keys k SET ${sets.join(', ')} WHERE k.id = $1 RETURNING ${KEY_COLUMNS}`, params);
        await keys.announce([id], tx);
        return keyRowFrom(res.rows[0]);
      });
      keys.forget([id]);
      return (await render([row], wallet, now))[0];
    });

    scope.delete<{ Params: { id: string } }>('/v1/keys/:id', async (req) => {
      const auth = await management(req.headers);
      const now = clock.now();
      const wallet = await walletOf(auth);
      const id = req.params.id;
      const closed = await db.transaction(async (tx) => {
        const res = await tx.query(
          `UPDATE api_keys k SET closed_at = $4::timestamptz, closed_reason = 'deleted'
            WHERE k.id = $1 AND k.wallet_id = $2 AND ${doorKeyWhere} AND ${activeWhere('$3')}
            RETURNING k.id`,
          [id, wallet.id, koreanDate(now), now.toISOString()],
        );
        if (res.rows.length === 0) return false;
        await keys.announce([id], tx);
        return true;
      });
      if (!closed) throw notFound(id);
      keys.forget([id]);
      return { id, object: 'api_key', deleted: true };
    });
  });
}
