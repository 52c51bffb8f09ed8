// The holds that charges kept on disk owe: marked in the database while one of their charges is kept and not yet
// written, so the sweeper does not give their money back when this process dies (money.md, "A crash at each step").

/** Writes the mark (`untilMs`: the least life it keeps) or takes it off (`null`). */
type MarkHold = (reservationId: string, untilMs: number | null) => Promise<unknown>;

interface Hold {
  /** Charges kept on disk against it and not yet written. */
  kept: number;
  /** Whether the database has the mark as `kept` last asked. */
  marked: boolean;
  /** Its marks and unmarks, one at a time in the order asked, so a late mark never undoes an unmark. */
  chain: Promise<void>;
}

export class KeptHolds {
  private readonly holds = new Map<string, Hold>();

  constructor(
    private readonly mark: MarkHold,
    /** How long a mark holds the hold at least: as long as the writer tries its charges. */
    private readonly lifeMs: number,
    private readonly warn: (err: unknown, reservationId: string) => void,
  ) {}

  /** A charge against `reservationId` was kept on disk. */
  kept(reservationId: string): void {
    const hold = this.holds.get(reservationId) ?? { kept: 0, marked: false, chain: Promise.resolve() };
    this.holds.set(reservationId, hold);
    hold.kept++;
    this.settle(reservationId, hold);
  }

  /** A kept charge against `reservationId` was written, or given up. */
  landed(reservationId: string): void {
    const hold = this.holds.get(reservationId);
    if (!hold) return;
    hold.kept--;
    this.settle(reservationId, hold);
  }

  /** Asks again for a mark the database did not take (called at a kept charge's failed tries). */
  retry(reservationId: string): void {
    const hold = this.holds.get(reservationId);
    if (hold) this.settle(reservationId, hold);
  }

  /** Marks or unmarks so the database says what `kept` says; forgets the hold once unmarked with nothing kept. */
  private settle(reservationId: string, hold: Hold): void {
    hold.chain = hold.chain.then(async () => {
      const want = hold.kept > 0;
      if (want === hold.marked) {
        if (!want && this.holds.get(reservationId) === hold) this.holds.delete(reservationId);
        return;
      }
      try {
        await this.mark(reservationId, want ? Date.now() + this.lifeMs : null);
        hold.marked = want;
        if (!want && hold.kept === 0 && this.holds.get(reservationId) === hold) this.holds.delete(reservationId);
      } catch (e) {
        this.warn(e, reservationId);
      }
    });
  }
}
