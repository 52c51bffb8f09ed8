// Budget leases: one reservation per wallet and vendor on which a process admits calls in memory, each call's charge
// a draw on it. Reasoning: docs/money.md ("States") and docs/decisions/leases.md.
import type { Clock } from '../core/clock.ts';
import { addCount } from '../core/counts.ts';
import { settledWithin } from '../core/wait.ts';
import { ChangedKeys, toldAfter } from './changed-keys.ts';
import { type ChargeRowLadder, chargeFirst } from './charge-first.ts';
import { drawIntent } from './charge-spool.ts';
import type { Charge, ChargeWriter } from './charge-writer.ts';
import { InFlightTeller } from './in-flight.ts';
import { assertMoney } from './invariants.ts';
import { type LeaseSettings, SpendRates, sliceFor } from './lease-sizing.ts';
import type { Lease, LeaseHold, LeaseKey, LeasePair, LeaseStats } from './lease-state.ts';
import { addInFlight, admits, free, freeSum, lapsed, ofWallet, pairKey, spentOut } from './lease-state.ts';
import type { HoldRenewals } from './renewals.ts';
import { type FirstTry, LEASE_CALL_PREFIX, type Ledger, type MoneyLog } from './types.ts';

export type { LeaseHold, LeaseKey, LeaseSettings, LeaseStats };

/** Draws decided and not yet written, at most, per process (`leases.max_pending_draws`; docs/decisions/leases.md). */
export const DEFAULT_MAX_PENDING_DRAWS = 1_024;
/** Grants a call no lease covered waits for before it takes the exact path. */
const MAX_GRANT_WAITS = 2;
/** Rounds of waiting for draws decided meanwhile: calls that never stop never flush, nor retire their lease. */
const MAX_DRAIN_ROUNDS = 16;
/** How long a key change applied here waits for the charges decided before it (within the changer's 2 s wait). */
const CHANGE_WAIT_MS = 800;
/** After a lease was refused or taken back, no new lease for the pair this long. */
const COOLDOWN_MS = 2_000;

export class BudgetLeases {
  private readonly leases = new Map<string, Lease[]>();
  /** The pair's grant in flight, which calls no lease covers wait for. */
  private readonly acquiring = new Map<string, Promise<void>>();
  /** What the calls waiting on a pair's grant hold together: the grant is sized to cover them. */
  private readonly waitingNano = new Map<string, bigint>();
  private readonly cooldownUntil = new Map<string, number>();
  private readonly retiring = new Map<Lease, Promise<void>>();
  private readonly spend = new SpendRates();
  private readonly timer: NodeJS.Timeout;
  private readonly teller: InFlightTeller;
  private readonly changedKeys = new ChangedKeys();
  private stopping = false;
  private pendingTotal = 0;
  private admitted = 0;
  private missed = 0;

  constructor(
    private readonly ledger: Ledger,
    private readonly clock: Clock,
    private readonly settings: () => LeaseSettings,
    private readonly log: MoneyLog,
    private readonly writer: ChargeWriter,
    private readonly renewals: HoldRenewals,
  ) {
    this.timer = setInterval(() => this.tend(), Math.max(200, Math.min(settings().ttlMs / 3, settings().idleReturnMs / 2)));
    this.timer.unref();
    this.teller = new InFlightTeller(ledger, () => this.all(), log);
  }

  /** Every lease this process holds, open or going back. */
  private all(): Lease[] {
    return [...this.leases.values()].flat();
  }

  /**
   * Admits the call of `callerKeyId` on a lease of the pair, in memory, or after a grant in flight (leases.md, "Waiting
   * for a grant"); null when none covers it (it asks for one, unless draws are at their bound): the call then takes
   * the exact path. `leaseKey`: the capped key whose allowance the lease is.
   */
  holdOrWait(
    walletId: string,
    vendor: string,
    amountNano: bigint,
    leaseKey?: LeaseKey,
    callerKeyId?: string,
  ): LeaseHold | null | Promise<LeaseHold | null> {
    const pair: LeasePair = { walletId, vendor, key: leaseKey };
    const key = pairKey(pair);
    const leased = this.holdNow(key, pair, amountNano, callerKeyId);
    if (leased) return leased;
    if (this.acquiring.has(key) && this.mayAdmit()) return this.holdAfterGrants(key, pair, amountNano, callerKeyId);
    if (!this.stopping) this.missed++;
    return null;
  }

  private mayAdmit(): boolean {
    return !this.stopping && this.pendingTotal < this.settings().maxPendingDraws;
  }

  private holdNow(key: string, pair: LeasePair, amountNano: bigint, callerKeyId: string | undefined): LeaseHold | null {
    if (!this.mayAdmit()) return null;
    const list = this.leases.get(key) ?? [];
    const lease = list.find((l) => admits(l, amountNano, this.clock.now()));
    if (!lease) {
      this.acquire(key, pair, amountNano);
      return null;
    }
    addInFlight(lease, callerKeyId, amountNano);
    assertMoney(free(lease) >= 0n, () => `lease ${lease.reservation.id} admitted past its grant`);
    lease.lastUsedMs = Date.now();
    // Refill ahead of need: one more lease when the pair's leases run low (not one per call: each is money held).
    if (freeSum(list.filter((l) => l.open)) * 4n < lease.granted) this.acquire(key, pair, amountNano);
    this.admitted++;
    return { lease, amountNano, keyId: callerKeyId, seq: this.admitted };
  }

  private async holdAfterGrants(key: string, pair: LeasePair, amountNano: bigint, callerKeyId?: string): Promise<LeaseHold | null> {
    addCount(this.waitingNano, key, amountNano);
    try {
      for (let waits = 0; waits < MAX_GRANT_WAITS && this.acquiring.has(key); waits++) {
        await this.acquiring.get(key);
        const leased = this.holdNow(key, pair, amountNano, callerKeyId);
        if (leased) return leased;
      }
    } finally {
      addCount(this.waitingNano, key, -amountNano);
    }
    this.missed++;
    return null;
  }

  stats(): LeaseStats {
    const all = this.all();
    return {
      leases: all.length,
      open: all.filter((l) => l.open).length,
      unspentNano: all.reduce((a, l) => a + (l.granted > l.spent ? l.granted - l.spent : 0n), 0n),
      inFlightNano: all.reduce((a, l) => a + l.inFlight, 0n),
      pendingDraws: this.pendingTotal,
      admitted: this.admitted,
      missed: this.missed,
    };
  }

  /** What this process's leases of the wallet (`keyId`: of that key's allowance) hold for no call: it goes back when a call needs it. */
  unheld(walletId: string, keyId?: string): bigint {
    return freeSum(this.all().filter((l) => l.walletId === walletId && (keyId === undefined || l.key?.keyId === keyId)));
  }

  /** The call did not happen: its hold goes back to the lease. */
  release(h: LeaseHold): void {
    addInFlight(h.lease, h.keyId, -h.amountNano);
    this.retireIfDone(h.lease);
  }

  /**
   * Decided here, once: the lease's figures never move again for this call; the writer only writes it. Past what the
   * lease holds for no other call, it is charged as a call's own hold is (leases.md, "A call that costs more than its lease").
   */
  charge(h: LeaseHold, costNano: bigint, drawId: string, ladder: ChargeRowLadder): Charge {
    const lease = h.lease;
    addInFlight(lease, h.keyId, -h.amountNano);
    const cost = costNano < 0n ? 0n : costNano;
    this.spend.note(pairKey(lease), cost, Date.now());
    // Its own hold is free again; what the lease holds for its other calls in flight is theirs, never this call's.
    // Past a lot's expiry, what the lease holds for no call is the expiry's: the call takes its own hold, as a call
    // on a hold of its own does (docs/money.md, "Lots that expire").
    const unheld = free(lease) > 0n ? free(lease) : 0n;
    const room = lapsed(lease, this.clock.now()) && h.amountNano < unheld ? h.amountNano : unheld;
    const holdAtMostNano = cost <= room ? undefined : room;
    lease.spent += holdAtMostNano ?? cost;
    assertMoney(lease.spent + lease.inFlight <= lease.granted, () => `lease ${lease.reservation.id} spent past its grant`);
    const write = async (firstTry: FirstTry) => {
      if (holdAtMostNano !== undefined) await this.returnLeasesIfShort(lease, cost - holdAtMostNano);
      return chargeFirst(ladder, (rows) => this.ledger.draw(lease.reservation, cost, drawId, rows, { holdAtMostNano, firstTry }));
    };
    const intent = () => drawIntent(lease.reservation.id, cost, drawId, ladder.current, holdAtMostNano);
    const charge = this.track(lease, this.writer.submit(drawId, write, intent, lease.walletId));
    this.retireIfDone(lease);
    // In flight at a change of its key: its answer also waits for its hold to be told gone (leases.md, changed-keys.ts).
    return this.changedKeys.before(h.seq, lease.walletId, h.keyId) ? toldAfter(charge, () => this.teller.written()) : charge;
  }

  /** Before a charge past its lease: gives the wallet's leases back when they hold money unused and it is `shortNano` short. */
  private async returnLeasesIfShort(lease: Lease, shortNano: bigint): Promise<void> {
    await Promise.all([...this.acquiring].filter(([k]) => ofWallet(k, lease.walletId)).map(([, granting]) => granting));
    const unused = this.all().some((l) => l.walletId === lease.walletId && l !== lease && free(l) > 0n);
    if (unused && (await this.ledger.usableNano(lease.walletId, lease.vendor)) < shortNano) await this.returnWallet(lease.walletId);
  }

  /** A charge drawn on the lease: the lease is kept (and renewed) until it is written. */
  private track(lease: Lease, charge: Charge): Charge {
    lease.pending.add(charge.done);
    this.pendingTotal++;
    void charge.done.then(() => {
      lease.pending.delete(charge.done);
      this.pendingTotal--;
    });
    return charge;
  }

  /** Waits until every draw decided so far is written (read-your-writes for this process). */
  async flushed(): Promise<void> {
    await settleDraws(() => this.all().flatMap((l) => [...l.pending]));
    await this.teller.written(); // and every view then shows what the calls still running hold
  }

  /**
   * A key change applied here, `target` as its notification names it: resolves once the database has what this
   * process's calls on leases hold now, per key, and remembers the calls in flight (changed-keys.ts).
   */
  async keysChanged(target: string): Promise<void> {
    this.changedKeys.note(target, this.admitted);
    // A call charged in memory is no longer in flight, and until its record commits nothing else shows it: the
    // charges decided before the change are written first, as far as CHANGE_WAIT_MS allows.
    const pending = this.all().flatMap((l) => [...l.pending]);
    if (pending.length > 0) await settledWithin(Promise.allSettled(pending), CHANGE_WAIT_MS);
    await this.teller.written();
  }

  /** Gives back this process's leases of the wallet (all vendors; `keyId`: that key's allowance only), then none for COOLDOWN_MS. */
  async returnWallet(walletId: string, keyId?: string): Promise<void> {
    const ofKey = (list: Lease[]) => keyId === undefined || list.some((l) => l.key?.keyId === keyId);
    const mine = [...this.leases].filter(([k, list]) => ofWallet(k, walletId) && ofKey(list));
    for (const [key, list] of mine) {
      this.coolDown(key);
      for (const lease of list) lease.open = false;
    }
    // A busy lease is trimmed now and retires in the background (leases.md, "Giving a wallet's leases back").
    const returned = (l: Lease) =>
      l.inFlight > 0n || l.pending.size > 0 ? this.trimToCalls(l).then(() => void this.retireWhenIdle(l)) : this.retireWhenIdle(l);
    await Promise.all(mine.flatMap(([, list]) => list.map(returned)));
  }

  async returnEveryWallet(): Promise<void> {
    const wallets = new Set(this.all().map((l) => l.walletId));
    await Promise.all([...wallets].map((w) => this.returnWallet(w)));
  }

  /** Gives back what a closed lease holds beyond its calls in flight and its draws not yet written. */
  private async trimToCalls(lease: Lease): Promise<void> {
    const spare = free(lease);
    if (spare <= 0n) return;
    lease.granted -= spare; // at once, so a second ask does not give it back twice
    try {
      const { releasedNano } = await this.ledger.trim(lease.reservation, spare);
      lease.granted += spare - releasedNano; // what the database did not give back is still held
    } catch (e) {
      lease.granted += spare;
      this.log.warn({ err: e }, 'lease not trimmed');
    }
  }

  /** At shutdown (after the calls ended): writes every draw, gives every lease back. */
  async close(timeoutMs: number): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    this.teller.stop();
    const all = this.all();
    for (const lease of all) lease.open = false;
    await settledWithin(Promise.all(all.map((l) => this.retireWhenIdle(l))), timeoutMs);
    // One not given back in time is left to the sweeper; the renewals the process's own holds share go on.
    for (const lease of this.all()) lease.stopRenewing();
    if (this.pendingTotal > 0) this.log.error({ pendingDraws: this.pendingTotal }, 'leases closed with draws not written');
  }

  private coolDown(key: string): void {
    this.cooldownUntil.set(key, Date.now() + COOLDOWN_MS);
  }

  private coolingDown(key: string): boolean {
    return (this.cooldownUntil.get(key) ?? 0) > Date.now();
  }

  private acquire(key: string, pair: LeasePair, amountNano: bigint): void {
    if (this.acquiring.has(key) || this.coolingDown(key)) return;
    const granting = this.grant(key, pair, amountNano)
      .catch((e: unknown) => {
        this.coolDown(key);
        this.log.warn({ err: e, walletId: pair.walletId, vendor: pair.vendor }, 'lease not granted');
      })
      .finally(() => this.acquiring.delete(key));
    this.acquiring.set(key, granting);
  }

  private async grant(key: string, pair: LeasePair, amountNano: bigint): Promise<void> {
    const s = this.settings();
    const { walletId, vendor, key: leaseKey } = pair;
    const walletNano = await this.ledger.usableNano(walletId, vendor);
    // A key's lease is sized on what its month leaves too; the reserve checks the cap again under the key's lock.
    const roomNano = leaseKey ? await leaseKey.roomNano() : walletNano;
    const usableNano = roomNano < walletNano ? roomNano : walletNano;
    const heldNano = (this.leases.get(key) ?? []).reduce((a, l) => a + l.inFlight, this.waitingNano.get(key) ?? 0n);
    const slice = sliceFor({ usableNano, amountNano, spendPerSecond: this.spend.perSecond(key), heldNano }, s);
    if (slice === null) return this.coolDown(key); // too small to lease: the exact path serves it
    const r = await this.ledger.reserve({
      walletId,
      vendor,
      amountNano: slice,
      callId: `${LEASE_CALL_PREFIX}${this.ledger.owner}`,
      expiresAt: new Date(this.clock.now().getTime() + s.ttlMs),
      keyId: leaseKey?.keyId,
      cap: leaseKey?.cap,
    });
    if (!r.ok) return this.coolDown(key);
    // Asked back (or stopping) while it was being granted: it goes straight back.
    const wanted = !this.stopping && !this.coolingDown(key);
    const lease: Lease = {
      reservation: r.reservation,
      ...pair,
      granted: slice,
      spent: 0n,
      inFlight: 0n,
      inFlightByKey: new Map(),
      inFlightChanges: 0,
      lastUsedMs: Date.now(),
      open: wanted,
      pending: new Set(),
      // Renewed while it admits calls or its calls run or their draws wait: expired, the sweeper would give their
      // money back to be spent again. Swept meanwhile, it admits no more (its calls' draws charge from available).
      stopRenewing: this.renewals.keep(r.reservation.id, s.ttlMs, {
        needed: () => lease.open || lease.inFlight > 0n || lease.pending.size > 0,
        lost: () => {
          lease.open = false;
        },
      }),
    };
    this.leases.set(key, [...(this.leases.get(key) ?? []), lease]);
    if (!wanted) await this.retireWhenIdle(lease);
  }

  /** Closes the idle and the spent leases and returns the closed ones (renewals.ts renews those still needed). */
  private tend(): void {
    const idleSince = Date.now() - this.settings().idleReturnMs;
    for (const lease of this.all()) {
      if (lease.open && lease.inFlight === 0n && lease.lastUsedMs < idleSince) lease.open = false;
      this.retireIfDone(lease);
    }
  }

  /** A spent or closed lease goes back once its last call ends, not at the next tend: it still holds its remainder. */
  private retireIfDone(lease: Lease): void {
    if (lease.inFlight > 0n || (lease.open && !spentOut(lease, this.clock.now()))) return;
    lease.open = false;
    void this.retireWhenIdle(lease);
  }

  /** Once nothing is in flight on a closed lease: its draws written, the rest released, the lease forgotten. */
  private retireWhenIdle(lease: Lease): Promise<void> {
    if (lease.inFlight > 0n) return Promise.resolve(); // the next tend comes back to it
    let p = this.retiring.get(lease);
    if (!p) {
      p = (async () => {
        await settleDraws(() => [...lease.pending]);
        if (lease.pending.size > 0) return; // its draws are still being written: the next tend comes back to it
        await this.ledger.release(lease.reservation);
        lease.stopRenewing();
        const key = pairKey(lease);
        const list = (this.leases.get(key) ?? []).filter((l) => l !== lease);
        if (list.length) this.leases.set(key, list);
        else this.leases.delete(key);
      })()
        .catch((e: unknown) => this.log.warn({ err: e }, 'lease not returned yet'))
        .finally(() => this.retiring.delete(lease));
      this.retiring.set(lease, p);
    }
    return p;
  }
}

/** Waits for the draws `pending` lists, again for those decided meanwhile, MAX_DRAIN_ROUNDS times at most. */
async function settleDraws(pending: () => Promise<unknown>[]): Promise<void> {
  for (let round = 0, left = pending(); round < MAX_DRAIN_ROUNDS && left.length > 0; round++, left = pending())
    await Promise.allSettled(left);
}
