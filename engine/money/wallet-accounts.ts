// Accounts on keys, quotas and the ledger: the money side of every call.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Accounts, Caller, ChargeRows, Headers, Hold } from './accounts.ts';
import type { Clock } from '../core/clock.ts';
import type { DoorConfig } from '../catalog/config.ts';
import { errors } from '../core/errors.ts';
import { keyFromHeaders, type AuthContext, type KeyService } from '../keys/index.ts';
import type { KeyCap, Ledger, Reservation, ReserveResult } from './ledger.ts';
import { LEASE_CALL_PREFIX } from './types.ts';
import type { BudgetLeases, LeaseHold, LeaseKey } from './leases.ts';
import { readHeldByKey } from './batch-sql.ts';
import { readLeasedByLot, spendableOf } from './spendable.ts';
import { chargeRow } from '../db/charge-rows.ts';
import type { Db } from '../db/db.ts';
import { chargeFirst, ChargeRowLadder } from './charge-first.ts';
import type { Charge, ChargeWriter } from './charge-writer.ts';
import { nanoToCreditsCeil, nanoToCreditsFloor } from '../core/money.ts';
import type { ModelEntry } from '../core/types.ts';

const quietLog = { error: () => {} };

interface LedgerHold extends Hold {
  reservation?: Reservation;
  /** Admitted on this process's budget lease instead of its own reservation. */
  leased?: LeaseHold;
}

export interface WalletAccountsDeps {
  keys: KeyService;
  ledger: Ledger;
  /** The ledger's database: the lease and hold views read it, and admit asks whether it seems reachable. */
  db: Db;
  clock: Clock;
  /** A model of the same kind that the given vendors serve (for the 403 suggestion). */
  suggestModel: (model: ModelEntry, vendors: string[]) => string | undefined;
  /** Where a charge written with fewer rows than asked is reported (charge-first.ts). */
  log?: { error: (o: object, m: string) => void };
  /** The one writer of every call's charge. */
  writer: ChargeWriter;
  /** Budget leases, when billing.yaml turns them on (read at each call). */
  leases?: { book: BudgetLeases; enabled: () => boolean; askOthersToReturn: (walletId: string) => Promise<void> };
}

/** How long a call refused for credit waits for other processes to give back their leases of the wallet. */
const LEASE_RETURN_WAIT_MS = 1_000;
/** When to try again a call refused while the wallet's own calls in flight hold money (retry-after). */
const CALLS_IN_FLIGHT_LIFT_MS = 1_000;
/** How often a call waiting for leases to come back looks at the balance. */
const RETURN_POLL_MS = 50;
/** How long a call waits for a lost database connection to come back before it is refused (503). */
const REACHABLE_WAIT_MS = 250;

/**
 * A caller this gateway authenticated, carrying its key's context privately (the pipeline sees a Caller).
 * Not a WeakMap from caller to context: a new caller per call as the key of a long-lived WeakMap kept every
 * caller, and what it held, through young collections (engine/http/request-slots.ts says why).
 */
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

  static authOf(caller: Caller): AuthContext | undefined {
    return #auth in caller ? (caller as AuthenticatedCaller).#auth : undefined;
  }
}

export function createWalletAccounts(deps: WalletAccountsDeps): Accounts {
  const { keys, ledger, clock } = deps;
  const authOf = (caller: Caller): AuthContext => {
    const auth = AuthenticatedCaller.authOf(caller);
    if (!auth) throw errors.unavailable('The caller was not authenticated by this gateway.');
    return auth;
  };

  async function notInPlan(walletId: string, model: ModelEntry): Promise<never> {
    const { lots } = await ledger.balance(walletId);
    const vendors = [...new Set(lots.flatMap((l) => l.vendors ?? []))];
    const suggestion = deps.suggestModel(model, vendors);
    throw errors.modelNotInPlan(
      `Your credits cannot call vendor ${model.vendor.toUpperCase()} model '${model.id}': it needs a vendor ` +
        `${model.vendor.toUpperCase()} pack or credits without a model restriction.` +
        (suggestion ? ` Your credits can call '${suggestion}'.` : ''),
      suggestion,
    );
  }

  /** A key's monthly allowance, to be leased: its room is the limit less the month's finished use and the key's holds. */
  const keyAllowance = (keyId: string, cap: KeyCap): LeaseKey => ({
    keyId,
    cap,
    async roomNano() {
      const [use, held] = await Promise.all([keys.quota.usage([keyId], clock.now()), readHeldByKey(deps.db, [keyId])]);
      const room = cap.limitNano - (use.get(keyId)?.monthNano ?? 0n) - (held.get(keyId) ?? 0n);
      return room > 0n ? room : 0n;
    },
  });

  /** Whether leases (another process's, once ours are back) still hold some of the wallet: only then is waiting worth it. */
  const leasedElsewhere = async (walletId: string): Promise<boolean> =>
    [...(await readLeasedByLot(deps.db, [walletId])).values()].some((n) => n > 0n);

  /**
   * The charge rows a settle writes: the key's quota count, then the call's own (its usage record); with fewer
   * when the database refuses them for good (charge-first.ts).
   */
  const chargeRowLadder = (callId: string, keyId: string, finishedAt: Date, rows: ChargeRows = []): ChargeRowLadder => {
    const quota = chargeRow(keys.quota.useWriter, { keyId, finishedAt });
    return new ChargeRowLadder([[quota, ...rows], [quota], undefined], deps.log ?? quietLog, callId);
  };

  /** Whether leases (another process's, once ours are back) still hold some of the key's monthly allowance. */
  const keyLeasedElsewhere = async (keyId: string): Promise<boolean> =>
    (
      await deps.db.query(`SELECT 1 FROM reservations WHERE key_id = $1 AND state = 'held' AND call_id LIKE $2 LIMIT 1`, [
        keyId,
        `${LEASE_CALL_PREFIX}%`,
      ])
    ).rows.length > 0;

  /**
   * A reserve refused while what it needs may sit in leases, this process's or another's: for credit (`short`
   * 'insufficient_credit': the wallet's money), or over the key's monthly limit ('key_limit': a lease of the key's
   * allowance holds part of the month). Gives back this process's leases, asks the others for theirs, and tries
   * again as money or allowance comes back, until LEASE_RETURN_WAIT_MS have passed. Not once only: several calls
   * can wait on one return, and when enough for one comes back first, all of them try; the ones that lose that
   * race wait for the rest.
   */
  async function reserveAsLeasesReturn(
    walletId: string,
    short: 'insufficient_credit' | 'key_limit',
    reserve: () => Promise<ReserveResult>,
    leases: NonNullable<WalletAccountsDeps['leases']>,
    waitFor: { keyId?: string; stillShort: () => Promise<boolean>; leasedElsewhere: () => Promise<boolean> },
  ): Promise<ReserveResult> {
    await leases.book.returnWallet(walletId, waitFor.keyId);
    const deadline = Date.now() + LEASE_RETURN_WAIT_MS;
    let asked = false;
    for (;;) {
      const result = await reserve();
      if (result.ok || result.reason !== short || Date.now() >= deadline || !(await waitFor.leasedElsewhere())) return result;
      if (!asked) await leases.askOthersToReturn(walletId);
      asked = true;
      do await sleep(RETURN_POLL_MS);
      while (Date.now() < deadline && (await waitFor.stillShort()));
    }
  }

  /**
   * Charges once and counts the charge on the key's quotas on the Korean day the call finishes, in the
   * same transaction: a crash cannot leave money charged and the quota uncounted.
   */
  async function settleAndCount(reservation: Reservation | string, keyId: string, costNano: bigint, rows?: ChargeRows): Promise<bigint> {
    const finishedAt = clock.now();
    const ladder = chargeRowLadder(typeof reservation === 'string' ? reservation : reservation.callId, keyId, finishedAt, rows);
    const use = keys.quota.useToken(keyId);
    const settled = await chargeFirst(ladder, (chargeRows) => ledger.settle(reservation, costNano, chargeRows));
    keys.quota.noteUse(keyId, settled.chargedNano, finishedAt, use);
    return settled.chargedNano;
  }

  return {
    async authenticate(headers: Headers, keyHeaders: DoorConfig['key_headers'] = ['bearer']): Promise<Caller> {
      const allowXApiKey = keyHeaders.includes('x-api-key');
      const auth = await keys.authenticate(keyFromHeaders(headers, { allowXApiKey }), 'api', { allowXApiKey });
      return new AuthenticatedCaller(auth);
    },

    /**
     * The monthly limit is checked twice: first on finished use alone (a cheap refusal), then by the ledger in
     * the reservation's transaction, with the key's calls in flight counted and the key's month row locked, so
     * calls sent at once (to any process) cannot pass the limit together.
     */
    async admit(caller, model, amountNano, callId, advice): Promise<Hold> {
      const auth = authOf(caller);
      // Charges the database has not taken are answers given on credit: none more until it takes them, nor while
      // it looks gone (a call admitted on a lease would otherwise be served with no database to charge it in).
      // The synchronous check first: a call waits (for a reconnect) only when the database already looks gone.
      const gone = deps.db.seemsReachable?.() === false && (await deps.db.reachable?.(REACHABLE_WAIT_MS)) === false;
      if (deps.writer.failing || gone) {
        throw errors.unavailable('The ledger is not taking writes right now. Nothing was charged; retry shortly.');
      }
      const now = clock.now();
      await keys.quota.checkQuota(auth, amountNano, now);
      const cap = keys.quota.monthlyCap(auth, now) ?? undefined;
      // A key with a monthly limit is admitted on a lease of its own allowance (a reservation carrying its key and
      // cap, so the cap counts it in every process). A daily limit needs nothing more: a call's use is committed
      // before its answer ends, so the next call sees it. A video job holds per call: its hold outlives the
      // process by its durable reference.
      const leases = deps.leases?.enabled() && model.kind !== 'video' ? deps.leases : undefined;
      const leaseKey = cap && leases ? keyAllowance(auth.keyId, cap) : undefined;
      const leased = await leases?.book.holdOrWait(caller.walletId, model.vendor, amountNano, leaseKey);
      if (leased) {
        const hold: LedgerHold = { callId, amountNano, leased };
        return hold;
      }
      const reserve = () =>
        ledger.reserve({ walletId: caller.walletId, vendor: model.vendor, amountNano, callId, keyId: caller.keyId, cap });
      let result = await reserve();
      // Asked back whether or not leases admit calls now: a reload that turned them off leaves the ones held
      // (this process's until they go back idle, another process's while it still runs with them) holding money.
      if (!result.ok && result.reason === 'insufficient_credit' && deps.leases) {
        result = await reserveAsLeasesReturn(caller.walletId, 'insufficient_credit', reserve, deps.leases, {
          stillShort: async () => (await ledger.usableNano(caller.walletId, model.vendor)) < amountNano,
          leasedElsewhere: () => leasedElsewhere(caller.walletId),
        });
      }
      if (!result.ok && result.reason === 'key_limit' && leaseKey) {
        // The key's leases, this process's or another's, may hold the allowance this call needs (a call larger
        // than what they have left): an idle lease of another process must not refuse a call the month allows.
        result = await reserveAsLeasesReturn(caller.walletId, 'key_limit', reserve, leases!, {
          keyId: leaseKey.keyId,
          stillShort: async () => (await leaseKey.roomNano()) < amountNano,
          leasedElsewhere: () => keyLeasedElsewhere(leaseKey.keyId),
        });
      }
      if (result.ok) {
        const hold: LedgerHold = { callId, amountNano, reservation: result.reservation };
        return hold;
      }
      if (result.reason === 'key_limit') throw keys.quota.monthlyLimitError(auth, amountNano, result.keyUsedNano, result.keyHeldNano, now);
      if (result.reason === 'not_in_plan') return notInPlan(caller.walletId, model);
      // Calls in flight give back what they hold beyond their cost when they finish: then a moment's wait may do.
      const heldByCalls = (await spendableOf(deps.db, ledger, caller.walletId)).reservedNano;
      throw errors.insufficientCredit(
        `This call may cost up to ${nanoToCreditsCeil(amountNano)} credits, and ${nanoToCreditsFloor(result.availableNano)} ` +
          `credits are available for it` +
          (heldByCalls > 0n ? ` while calls in progress hold ${nanoToCreditsCeil(heldByCalls)} more` : '') +
          `. Nothing was charged. Top up${advice ? `, or ${advice}` : ''}.`,
        heldByCalls > 0n ? CALLS_IN_FLIGHT_LIFT_MS : null,
      );
    },

    async room(caller, model) {
      const auth = authOf(caller);
      const book = deps.leases?.book;
      let room = (await ledger.usableNano(caller.walletId, model.vendor)) + (book?.unheld(caller.walletId) ?? 0n);
      const cap = keys.quota.monthlyCap(auth, clock.now());
      if (cap) {
        const keyRoom = (await keyAllowance(auth.keyId, cap).roomNano()) + (book?.unheld(caller.walletId, auth.keyId) ?? 0n);
        if (keyRoom < room) room = keyRoom;
      }
      const dayLeft = await keys.quota.dayLeftNano(auth, clock.now());
      return dayLeft !== null && dayLeft < room ? dayLeft : room;
    },

    dayLeft: (caller) => keys.quota.dayLeftNano(authOf(caller), clock.now()),

    settle(caller, hold, costNano, rows): Charge {
      const h = hold as LedgerHold;
      // The intent, built once: what the hold is, what it costs, which charge rows go with it.
      const finishedAt = clock.now();
      const ladder = chargeRowLadder(h.callId, caller.keyId, finishedAt, rows);
      // Only a key whose check reads this process's figure has its charge noted there.
      const use = keys.quota.readsFigure(authOf(caller)) ? keys.quota.useToken(caller.keyId) : null;
      const charge = h.leased
        ? deps.leases!.book.settle(h.leased, costNano, h.callId, ladder)
        : deps.writer.submit(h.callId, () => chargeFirst(ladder, (chargeRows) => ledger.settle(h.reservation!, costNano, chargeRows)));
      if (use === null) return charge;
      // Before the answer's end (which waits on the same commit): the key's next call sees this use.
      charge.committed.then(
        (charged) => keys.quota.noteUse(caller.keyId, charged, finishedAt, use),
        () => undefined,
      );
      return charge;
    },

    async release(hold) {
      const h = hold as LedgerHold;
      if (h.leased) deps.leases!.book.release(h.leased);
      else await ledger.release(h.reservation!);
    },

    holdRef(hold) {
      const h = hold as LedgerHold;
      if (!h.reservation) throw new Error('a leased hold has no durable reference');
      return h.reservation.id;
    },

    async extendHold(holdRef, expiresAt) {
      return ledger.extend(holdRef, expiresAt);
    },

    settleDetached: (holdRef, keyId, costNano, rows) => settleAndCount(holdRef, keyId, costNano, rows),

    async releaseDetached(holdRef) {
      await ledger.release(holdRef);
    },
  };
}
