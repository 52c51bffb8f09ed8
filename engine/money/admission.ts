// Admitting a call: the checks before anything is held, then a hold on a budget lease or a reservation of its own,
// and a refusal in words a client can act on (docs/decisions/leases.md, "Which calls are leased").
import { setTimeout as sleep } from 'node:timers/promises';
import { type Clock, koreanMonthDays } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { nanoToCreditsCeil, nanoToCreditsFloor } from '../core/money.ts';
import type { ModelEntry } from '../core/types.ts';
import type { Db } from '../db/db.ts';
import { type AuthContext, type DayHeld, type DayHolds, type KeyService, readKeyStandings } from '../keys/index.ts';
import type { Caller, Hold } from './accounts.ts';
import type { ChargeWriter } from './charge-writer.ts';
import type { BudgetLeases, LeaseHold, LeaseKey } from './leases.ts';
import type { KeyCap, Ledger, Reservation, ReserveResult } from './ledger.ts';
import type { HoldRenewals } from './renewals.ts';
import { readLeasedByLot, spendableOf } from './spendable.ts';
import { LEASE_CALL_PREFIX, type MoneyLog } from './types.ts';

/** How long a call refused for credit waits for other processes to give back their leases of the wallet. */
const LEASE_RETURN_WAIT_MS = 1_000;
/** When to try again a call refused while the wallet's own calls in flight hold money (retry-after). */
const CALLS_IN_FLIGHT_LIFT_MS = 1_000;
/** How often a call waiting for leases to come back looks at the balance. */
const RETURN_POLL_MS = 50;
/** How long a call waits for a lost database connection to come back before it is refused (503). */
const REACHABLE_WAIT_MS = 250;
/** How long a call waits for its wallet's late charges to land before it is refused (503). */
const LATE_CHARGES_WAIT_MS = 2_000;

export interface LedgerHold extends Hold {
  reservation?: Reservation;
  leased?: LeaseHold;
  /** Lets go what the call holds against its key's and group's days in this process (keys/day-holds.ts). */
  letGoOfDay: () => void;
  /** Stops renewing the call's own reservation: it is charged or released. */
  stopRenewing?: () => void;
}

interface Admission {
  auth: AuthContext;
  caller: Caller;
  model: ModelEntry;
  amountNano: bigint;
  callId: string;
  /** What else the client could do, said in the refusal for credit. */
  advice?: string | undefined;
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
  log: Pick<MoneyLog, 'error'>;
  writer: ChargeWriter;
  /** The process's renewals of held reservations, shared with the leases. */
  renewals: HoldRenewals;
  leases: AdmissionLeases;
}

/** The process's budget leases; billing.yaml turns their use on or off (read at each call). */
export interface AdmissionLeases {
  book: BudgetLeases;
  enabled: () => boolean;
  askOthersToReturn: (walletId: string) => Promise<void>;
}

/** The monthly limit is checked twice: cheaply on finished use, then under the key's lock with its holds counted. */
export async function admit(deps: WalletAccountsDeps, a: Admission, dayHolds: DayHolds): Promise<LedgerHold> {
  await refuseWhileChargesWait(deps, a.caller.walletId);
  // Counted before the first wait, so a call sent beside it sees it. A video job's hold is read from its reservation
  // (keys/day-holds.ts), since it ends in its worker, maybe on another process.
  const held = dayHolds.of(a.auth);
  const others = held instanceof Promise ? await held : held;
  const letGoOfDay = a.model.kind === 'video' ? () => undefined : dayHolds.add(a.auth, a.amountNano);
  try {
    return await admitCounted(deps, a, others, letGoOfDay);
  } catch (e) {
    letGoOfDay();
    throw e;
  }
}

async function admitCounted(deps: WalletAccountsDeps, a: Admission, others: DayHeld, letGoOfDay: () => void): Promise<LedgerHold> {
  const now = deps.clock.now();
  await deps.keys.quota.checkQuota(a.auth, a.amountNano, now, others);
  const cap = deps.keys.quota.monthlyCap(a.auth, now) ?? undefined;
  // A capped key leases its own allowance; a video job or a grouped key holds per call (docs/decisions/leases.md).
  const leases = deps.leases.enabled() && a.model.kind !== 'video' && !cap?.group ? deps.leases : undefined;
  const leaseKey = cap && leases ? keyAllowance(deps, a.auth.keyId, cap) : undefined;
  const leased = await leases?.book.holdOrWait(a.caller.walletId, a.model.vendor, a.amountNano, leaseKey, a.auth.keyId);
  if (leased) return { callId: a.callId, amountNano: a.amountNano, leased, letGoOfDay };
  const result = await reserveOwn(deps, a, cap, leaseKey);
  if (result.ok) return ownHold(a, result.reservation, letGoOfDay, deps.renewals);
  if (result.reason === 'key_limit')
    throw deps.keys.quota.monthlyLimitError(a.auth, a.amountNano, result.keyUsedNano, result.keyHeldNano, now, result.group);
  if (result.reason === 'not_in_plan') return notInPlan(deps, a.caller.walletId, a.model);
  throw await creditRefusal(deps, a, result.availableNano);
}

/** A call's own renewals stop after a day at most, the charge writer's horizon: a hold whose call was lost then expires. */
const MAX_RENEW_MS = 24 * 60 * 60 * 1000;

/** A call's own reservation is renewed while its call runs, as a lease is (docs/money.md); a video job extends its own. */
function ownHold(a: Admission, reservation: Reservation, letGoOfDay: () => void, renewals: HoldRenewals): LedgerHold {
  const hold: LedgerHold = { callId: a.callId, amountNano: a.amountNano, reservation, letGoOfDay };
  if (a.model.kind === 'video') return hold;
  const ttlMs = reservation.expiresAt.getTime() - reservation.createdAt.getTime();
  hold.stopRenewing = renewals.keep(reservation.id, ttlMs, { maxMs: MAX_RENEW_MS });
  return hold;
}

/** Charges not yet taken are answers given on credit (docs/decisions/charge-writer.md, "Refusing calls while charges wait"). */
async function refuseWhileChargesWait(deps: WalletAccountsDeps, walletId: string): Promise<void> {
  const gone = deps.db.seemsReachable?.() === false && (await deps.db.reachable?.(REACHABLE_WAIT_MS)) === false;
  if (gone || (deps.writer.behind(walletId) && !(await deps.writer.caughtUp(walletId, LATE_CHARGES_WAIT_MS)))) {
    throw errors.unavailable('The ledger is not taking writes right now. Nothing was charged; retry shortly.');
  }
}

/** A reservation of the call's own; when refused while leases may hold what it needs, tried again as they return. */
async function reserveOwn(deps: WalletAccountsDeps, a: Admission, cap: KeyCap | undefined, leaseKey: LeaseKey | undefined) {
  const { walletId } = a.caller;
  const reserve = () =>
    deps.ledger.reserve({ walletId, vendor: a.model.vendor, amountNano: a.amountNano, callId: a.callId, keyId: a.caller.keyId, cap });
  let result = await reserve();
  // Asked back even with leases off now: a reload that turned them off leaves the ones held holding money.
  if (!result.ok && result.reason === 'insufficient_credit') {
    result = await reserveAsLeasesReturn(walletId, 'insufficient_credit', reserve, deps.leases, {
      stillShort: async () => (await deps.ledger.usableNano(walletId, a.model.vendor)) < a.amountNano,
      leasedElsewhere: async () => [...(await readLeasedByLot(deps.db, [walletId])).values()].some((l) => l.unheld > 0n),
    });
  }
  if (!result.ok && result.reason === 'key_limit' && leaseKey) {
    // The key's leases, on any process, may hold the allowance this call needs: an idle one must not refuse it.
    result = await reserveAsLeasesReturn(walletId, 'key_limit', reserve, deps.leases, {
      keyId: leaseKey.keyId,
      stillShort: async () => (await leaseKey.roomNano()) < a.amountNano,
      leasedElsewhere: () => keyLeasedElsewhere(deps, leaseKey.keyId),
    });
  }
  return result;
}

/** A reserve refused while leases may hold what it needs (docs/decisions/leases.md, "A reserve refused while leases hold the money"). */
async function reserveAsLeasesReturn(
  walletId: string,
  short: 'insufficient_credit' | 'key_limit',
  reserve: () => Promise<ReserveResult>,
  leases: AdmissionLeases,
  waitFor: { keyId?: string; stillShort: () => Promise<boolean>; leasedElsewhere: () => Promise<boolean> },
): Promise<ReserveResult> {
  await leases.book.returnWallet(walletId, waitFor.keyId);
  const deadline = Date.now() + LEASE_RETURN_WAIT_MS;
  // Every round waits a poll at least, so the deadline allows this many; the last answer stands after them.
  for (let round = 0; round < LEASE_RETURN_WAIT_MS / RETURN_POLL_MS; round++) {
    const result = await reserve();
    if (result.ok || result.reason !== short || Date.now() >= deadline || !(await waitFor.leasedElsewhere())) return result;
    if (round === 0) await leases.askOthersToReturn(walletId);
    do await sleep(RETURN_POLL_MS);
    while (Date.now() < deadline && (await waitFor.stillShort()));
  }
  return reserve();
}

/** A key's monthly allowance, to be leased: its room is the limit less the month's finished use and the key's holds. */
export const keyAllowance = (deps: WalletAccountsDeps, keyId: string, cap: KeyCap): LeaseKey => ({
  keyId,
  cap,
  async roomNano() {
    // Use and holds in one snapshot: a charge committing meanwhile is counted once.
    const read = (await readKeyStandings(deps.db, [{ keyId, days: koreanMonthDays(deps.clock.now()) }])).get(keyId);
    const room = cap.limitNano - (read?.usedNano ?? 0n) - (read?.heldNano ?? 0n);
    return room > 0n ? room : 0n;
  },
});

/** Whether leases (another process's, once ours are back) still hold some of the key's monthly allowance. */
async function keyLeasedElsewhere(deps: WalletAccountsDeps, keyId: string): Promise<boolean> {
  const r = await deps.db.query(`SELECT 1 FROM reservations WHERE key_id = $1 AND state = 'held' AND call_id LIKE $2 LIMIT 1`, [
    keyId,
    `${LEASE_CALL_PREFIX}%`,
  ]);
  return r.rows.length > 0;
}

async function notInPlan(deps: WalletAccountsDeps, walletId: string, model: ModelEntry): Promise<never> {
  const { lots } = await deps.ledger.balance(walletId);
  const vendors = [...new Set(lots.flatMap((l) => l.vendors ?? []))];
  const suggestion = deps.suggestModel(model, vendors);
  throw errors.modelNotInPlan(
    `Your credits cannot call vendor ${model.vendor.toUpperCase()} model '${model.id}': it needs a vendor ` +
      `${model.vendor.toUpperCase()} pack or credits without a model restriction.` +
      (suggestion ? ` Your credits can call '${suggestion}'.` : ''),
    suggestion,
  );
}

/** Calls in flight give back what they hold beyond their cost when they finish: then a moment's wait may do. */
async function creditRefusal(deps: WalletAccountsDeps, a: Admission, availableNano: bigint) {
  const heldByCalls = (await spendableOf(deps.db, a.caller.walletId)).reservedNano;
  return errors.insufficientCredit(
    `This call may cost up to ${nanoToCreditsCeil(a.amountNano)} credits, and ${nanoToCreditsFloor(availableNano)} ` +
      `credits are available for it` +
      (heldByCalls > 0n ? ` while calls in progress hold ${nanoToCreditsCeil(heldByCalls)} more` : '') +
      `. Nothing was charged. Top up${a.advice ? `, or ${a.advice}` : ''}.`,
    heldByCalls > 0n ? CALLS_IN_FLIGHT_LIFT_MS : null,
  );
}
