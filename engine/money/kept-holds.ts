// The holds that charges kept on disk owe: marked in the database while one of their charges is kept and not yet
// written, so the sweeper leaves them when this process dies, until the spool is written again (money.md, "A crash
// at each step").
import { CHARGE_RETRY } from './retry.ts';

/** How long the sweeper leaves a marked hold past its expiry: as long as a charge writer tries its charges. */
export const KEPT_HOLD_MS = CHARGE_RETRY.maxMs * CHARGE_RETRY.attempts;

/** Writes the mark (true) or takes it off (false). */
type MarkHold = (reservationId: string, kept: boolean) => Promise<unknown>;

interface Hold {
  /** Charges kept on disk against it and not yet written. */
  kept: number;
  /** Whether the database has the mark as `kept` last asked. */
  marked: boolean;
  /** Its marks and unmarks, one at a time in the order asked, so a late mark never undoes an unmark. */
  chain: Promise<boolean>;
}

export class KeptHolds {
  private readonly holds = new Map<string, Hold>();

  constructor(
    private readonly mark: MarkHold,
    private readonly warn: (err: unknown, reservationId: string) => void,
  ) {}

  /** A charge against `reservationId` was kept on disk; resolves true once the database has the mark. */
  kept(reservationId: string): Promise<boolean> {
    const hold = this.holds.get(reservationId) ?? { kept: 0, marked: false, chain: Promise.resolve(true) };
    this.holds.set(reservationId, hold);
    hold.kept++;
    return this.syncMark(reservationId, hold);
  }

  /** A kept charge against `reservationId` was written, or given up; resolves true once the database agrees. */
  landed(reservationId: string): Promise<boolean> {
    const hold = this.holds.get(reservationId);
    if (!hold) return Promise.resolve(true);
    hold.kept--;
    return this.syncMark(reservationId, hold);
  }

  /** Asks again for a mark the database did not take (called at a kept charge's failed tries). */
  retry(reservationId: string): void {
    const hold = this.holds.get(reservationId);
    if (hold) void this.syncMark(reservationId, hold);
  }

  /** Marks or unmarks so the database says what `kept` says; forgets the hold once unmarked with nothing kept. */
  private syncMark(reservationId: string, hold: Hold): Promise<boolean> {
    hold.chain = hold.chain.then(async () => {
      const want = hold.kept > 0;
      if (want !== hold.marked) {
        try {
          await this.mark(reservationId, want);
          hold.marked = want;
        } catch (e) {
          this.warn(e, reservationId);
          return false;
        }
      }
      if (!hold.marked && hold.kept === 0 && this.holds.get(reservationId) === hold) this.holds.delete(reservationId);
      return true;
    });
    return hold.chain;
  }
}
