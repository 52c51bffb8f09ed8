// Accounts on keys, quotas and the ledger: the money side of every call.
import type { Accounts, Caller, Headers, Hold, WithSettle } from './accounts.ts';
import type { Clock } from '../core/clock.ts';
import type { DoorConfig } from '../catalog/config.ts';
import { errors } from '../core/errors.ts';
import { keyFromHeaders, type AuthContext, type KeyService } from '../keys/index.ts';
import type { Ledger, Reservation } from './ledger.ts';
import { nanoToCreditsCeil, nanoToCreditsFloor } from '../core/money.ts';
import type { ModelEntry } from '../core/types.ts';

interface LedgerHold extends Hold {
  reservation: Reservation;
}

export interface WalletAccountsDeps {
  keys: KeyService;
  ledger: Ledger;
  clock: Clock;
  /** A model of the same kind that the given vendors serve (for the 403 suggestion). */
  suggestModel: (model: ModelEntry, vendors: string[]) => string | undefined;
}

export function createWalletAccounts(deps: WalletAccountsDeps): Accounts {
  const { keys, ledger, clock } = deps;
  const contexts = new WeakMap<Caller, AuthContext>();

  const authOf = (caller: Caller): AuthContext => {
    const auth = contexts.get(caller);
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

  /**
   * Charges once and counts the charge on the key's quotas on the Korean day the call finishes, in the
   * same transaction: a crash cannot leave money charged and the quota uncounted.
   */
  async function settleAndCount(reservation: Reservation | string, keyId: string, costNano: bigint, alsoWrite?: WithSettle): Promise<bigint> {
    const finishedAt = clock.now();
    const settled = await ledger.settle(reservation, costNano, async (tx, charged) => {
      await keys.quota.recordUsage(keyId, charged, finishedAt, tx);
      await alsoWrite?.(tx, charged);
    });
    return settled.chargedNano;
  }

  return {
    async authenticate(headers: Headers, keyHeaders: DoorConfig['key_headers'] = ['bearer']): Promise<Caller> {
      const allowXApiKey = keyHeaders.includes('x-api-key');
      const auth = await keys.authenticate(keyFromHeaders(headers, { allowXApiKey }), 'api', { allowXApiKey });
      const caller: Caller = { keyId: auth.keyId, walletId: auth.walletId, keyPrefix: auth.keyPrefix, audience: auth.audience };
      contexts.set(caller, auth);
      return caller;
    },

    /**
     * The monthly limit is checked twice: first on finished use alone (a cheap refusal), then by the ledger in
     * the reservation's transaction, with the key's calls in flight counted and the key's month row locked, so
     * calls sent at once (to any process) cannot pass the limit together.
     */
    async admit(caller, model, amountNano, callId, advice): Promise<Hold> {
      const auth = authOf(caller);
      const now = clock.now();
      await keys.quota.checkQuota(auth, amountNano, now);
      const cap = keys.quota.monthlyCap(auth, now) ?? undefined;
      const result = await ledger.reserve({ walletId: caller.walletId, vendor: model.vendor, amountNano, callId, keyId: caller.keyId, cap });
      if (result.ok) {
        const hold: LedgerHold = { callId, amountNano, reservation: result.reservation };
        return hold;
      }
      if (result.reason === 'key_limit') throw keys.quota.monthlyLimitError(auth, amountNano, result.keyUsedNano, result.keyHeldNano, now);
      if (result.reason === 'not_in_plan') return notInPlan(caller.walletId, model);
      throw errors.insufficientCredit(
        `This call may cost up to ${nanoToCreditsCeil(amountNano)} credits, and ${nanoToCreditsFloor(result.availableNano)} ` +
          `credits are available for it. Nothing was charged. Top up${advice ? `, or ${advice}` : ''}.`,
      );
    },

    settle: (caller, hold, costNano, alsoWrite) => settleAndCount((hold as LedgerHold).reservation, caller.keyId, costNano, alsoWrite),

    async release(hold) {
      await ledger.release((hold as LedgerHold).reservation);
    },

    holdRef(hold) {
      return (hold as LedgerHold).reservation.id;
    },

    async extendHold(holdRef, expiresAt) {
      return ledger.extend(holdRef, expiresAt);
    },

    settleDetached: (holdRef, keyId, costNano) => settleAndCount(holdRef, keyId, costNano),

    async releaseDetached(holdRef) {
      await ledger.release(holdRef);
    },
  };
}
