// The key changes this process applied, by what they named (a key id, `wallet:<id>`, `*`), so that a call admitted on
// a lease before a change of its key is known when it is charged (docs/decisions/leases.md, "Which calls are leased").
import type { Charge } from './charge-writer.ts';

/** Changes remembered at most: a call of one forgotten is told gone at the in-flight teller's next tick (250 ms). */
const MAX_REMEMBERED = 10_000;

export class ChangedKeys {
  /** Target → how many calls the process had admitted on leases when the change was applied here. */
  private readonly at = new Map<string, number>();

  note(target: string, admitted: number): void {
    this.at.delete(target);
    this.at.set(target, admitted);
    if (this.at.size > MAX_REMEMBERED) this.at.delete(this.at.keys().next().value!);
  }

  /** Whether the call admitted as number `seq` (of `keyId`, on a lease of `walletId`) was in flight at a change of its key. */
  before(seq: number, walletId: string, keyId: string | undefined): boolean {
    if (this.at.size === 0) return false; // every leased charge asks: no change applied here, nothing to build
    return [keyId, `wallet:${walletId}`, '*'].some((target) => {
      const at = target === undefined ? undefined : this.at.get(target);
      return at !== undefined && seq <= at;
    });
  }
}

/** The charge of a call in flight at a change of its key: committed once its hold is also told gone (`told`). */
export function toldAfter(charge: Charge, told: () => Promise<void>): Charge {
  const committed = charge.committed.then((charged) => told().then(() => charged));
  const done = committed.then(() => undefined).catch(() => undefined);
  return { callId: charge.callId, committed, done, answeredFirst: () => charge.answeredFirst(), holdMarked: () => charge.holdMarked() };
}
