// Accounts on keys, quotas and the ledger: the money side of every call.
import type { DoorConfig } from '../catalog/config.ts';
import { errors } from '../core/errors.ts';
import type { ModelEntry } from '../core/types.ts';
import { type AuthContext, DayHolds, keyFromHeaders } from '../keys/index.ts';
import type { Accounts, Caller, ChargeRows, Headers, Room } from './accounts.ts';
import { admit, keyAllowance, type LedgerHold, type WalletAccountsDeps } from './admission.ts';
import { chargeFirst, ladderFor } from './charge-first.ts';
import type { Charge } from './charge-writer.ts';
import { isFinal } from './retry.ts';

const NOTHING_CHARGED = { chargedNano: 0n, shortfallNano: 0n };

/** Carries the key's context privately (the call path sees a Caller); not a WeakMap: docs/decisions/per-call-garbage.md. */
class AuthenticatedCaller implements Caller {
  readonly keyId: string;
  readonly walletId: string;
  readonly keyPrefix: string;
  readonly audience: Caller['audience'];
  readonly models: Caller['models'];
  readonly #auth: AuthContext;

  constructor(auth: AuthContext) {
    this.keyId = auth.keyId;
    this.walletId = auth.walletId;
    this.keyPrefix = auth.keyPrefix;
    this.audience = auth.audience;
    this.models = auth.models;
    this.#auth = auth;
  }

  static authOf(caller: Caller): AuthContext {
    if (#auth in caller) return caller.#auth;
    throw errors.unavailable('The caller was not authenticated by this gateway.');
  }
}

const authOf = (caller: Caller) => AuthenticatedCaller.authOf(caller);

/** Accounts.room: the least of what the wallet, the key's month, its group's month and the day leave. */
async function roomOf(deps: WalletAccountsDeps, dayHolds: DayHolds, caller: Caller, model: ModelEntry): Promise<Room> {
  const { keys, ledger, clock } = deps;
  const auth = authOf(caller);
  const { book } = deps.leases;
  const now = clock.now();
  const walletNano = (await ledger.usableNano(caller.walletId, model.vendor)) + book.unheld(caller.walletId);
  let room: Room = { nano: walletNano, bound: { kind: 'wallet' } };
  const tighter = (nano: bigint | null, bound: Room['bound']) => {
    if (nano !== null && nano < room.nano) room = { nano, bound };
  };
  const cap = keys.quota.monthlyCap(auth, now);
  if (cap)
    tighter((await keyAllowance(deps, auth.keyId, cap).roomNano()) + book.unheld(caller.walletId, auth.keyId), { kind: 'key_month' });
  // A grouped key's calls are held per call, never leased: what its group leaves is read, holds counted.
  if (cap?.group && auth.group) tighter(await keys.quota.groupMonthLeftNano(auth, now), { kind: 'group_month', group: auth.group.name });
  const dayHeld = await dayHolds.of(auth);
  // The class's day first: when it binds as tightly as the key's own, the refusal names the class's limit.
  if (auth.group) tighter(await keys.quota.groupDayLeftNano(auth, now, dayHeld), { kind: 'group_day', group: auth.group.name });
  tighter(await keys.quota.dayLeftNano(auth, now, dayHeld), { kind: 'day' });
  return room;
}

/** Accounts.chargeDetached: the charge and its count on the key's quotas share a transaction, so a crash cannot split them. */
async function chargeAndCount(
  deps: WalletAccountsDeps,
  holdRef: string,
  keyId: string,
  costNano: bigint,
  rows?: ChargeRows,
): Promise<bigint> {
  const { keys, ledger, clock } = deps;
  const finishedAt = clock.now();
  const ladder = ladderFor(rows, deps.log, holdRef);
  const use = keys.quota.useToken(keyId);
  const settled = await chargeFirst(ladder, (chargeRows) => ledger.settle(holdRef, costNano, chargeRows));
  keys.quota.noteUse(keyId, settled.chargedNano, finishedAt, use);
  return settled.chargedNano;
}

export function createWalletAccounts(deps: WalletAccountsDeps): Accounts {
  const { keys, ledger, clock } = deps;
  const dayHolds = new DayHolds(deps.db);

  return {
    async authenticate(headers: Headers, keyHeaders: DoorConfig['key_headers'] = ['bearer']): Promise<Caller> {
      const allowXApiKey = keyHeaders.includes('x-api-key');
      const auth = await keys.authenticate(keyFromHeaders(headers, { allowXApiKey }), 'api', { allowXApiKey });
      return new AuthenticatedCaller(auth);
    },

    async admit(caller, model, amountNano, callId, advice) {
      const auth = authOf(caller);
      // Told apart from the key's move: a move waits for this admission, or refuses it (keys/moving-keys.ts).
      const admitted = keys.moving.begin(auth.keyId, auth.movesSeen);
      try {
        return await admit(deps, { auth, caller, model, amountNano, callId, advice }, dayHolds);
      } finally {
        admitted();
      }
    },

    room: (caller, model) => roomOf(deps, dayHolds, caller, model),

    async dayLeft(caller) {
      const auth = authOf(caller);
      return keys.quota.dayLeftNano(auth, clock.now(), await dayHolds.of(auth));
    },

    dayTurn: (caller) => dayHolds.turn(authOf(caller)),

    charge(caller, hold, costNano, rows): Charge {
      const h = hold as LedgerHold;
      const finishedAt = clock.now();
      const ladder = ladderFor(rows, deps.log, h.callId);
      // Only a key whose check reads this process's figure has its charge noted there.
      const use = keys.quota.readsFigure(authOf(caller)) ? keys.quota.useToken(caller.keyId) : null;
      const charge = h.leased
        ? deps.leases.book.charge(h.leased, costNano, h.callId, ladder)
        : deps.writer.submit(
            h.callId,
            () => chargeFirst(ladder, (chargeRows) => ledger.settle(h.reservation!, costNano, chargeRows)),
            () => ({ callId: h.callId, kind: 'settle', reservationId: h.reservation!.id, costNano, rows: ladder.current }),
            caller.walletId,
          );
      // Its hold on the day counts until its use does: once the charge is committed (or given up).
      void charge.done.then(() => {
        h.letGoOfDay();
        h.stopRenewing?.();
      });
      if (use === null) return charge;
      // Before the answer's end (which waits on the same commit): the key's next call sees this use.
      charge.committed.then(
        (charged) => keys.quota.noteUse(caller.keyId, charged, finishedAt, use),
        () => undefined,
      );
      return charge;
    },

    release: (hold) => releaseHold(deps, hold as LedgerHold),

    holdRef(hold) {
      const h = hold as LedgerHold;
      if (!h.reservation) throw new Error('a leased hold has no durable reference');
      return h.reservation.id;
    },

    extendHold: async (holdRef, expiresAt) => (await ledger.extendAll([holdRef], expiresAt)).size > 0,

    chargeDetached: (holdRef, keyId, costNano, rows) => chargeAndCount(deps, holdRef, keyId, costNano, rows),

    async releaseDetached(holdRef) {
      await ledger.release(holdRef);
    },
  };
}

/** Gives a call's hold back: to its lease, or to the wallet through the ledger. */
async function releaseHold(deps: WalletAccountsDeps, h: LedgerHold): Promise<void> {
  h.letGoOfDay();
  h.stopRenewing?.();
  if (h.leased) return deps.leases.book.release(h.leased);
  const reservation = h.reservation!;
  await deps.ledger.release(reservation).catch((e: unknown) => {
    if (isFinal(e)) throw e;
    // Not taken now (rows locked, connection lost): the charge writer retries it rather than leave the money held
    // until the sweeper. A second release moves nothing.
    const retry = () => deps.ledger.release(reservation).then(() => NOTHING_CHARGED);
    deps.writer.submit(h.callId, retry, undefined, reservation.walletId).committed.catch(() => undefined);
  });
}
