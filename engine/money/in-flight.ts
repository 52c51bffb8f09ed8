// What the calls on this process's leases hold, in all and per calling key, told to the database a few times a second
// (docs/decisions/leases.md, "In-flight figures are a view, not money").
import type { Lease } from './lease-state.ts';
import type { Ledger, MoneyLog } from './types.ts';

/** How often the figures are written: a hold is seen by every process within this plus one write. */
export const IN_FLIGHT_TELL_MS = 250;

export class InFlightTeller {
  /** The lease's `inFlightChanges` when its figures were last written. */
  private readonly told = new WeakMap<Lease, number>();
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> | null = null;

  constructor(
    private readonly ledger: Pick<Ledger, 'noteInFlight'>,
    private readonly leases: () => readonly Lease[],
    private readonly log: Pick<MoneyLog, 'warn'>,
  ) {
    this.timer = setInterval(() => void this.tell(), IN_FLIGHT_TELL_MS);
    this.timer.unref();
  }

  /** Writes the figures that changed since they were last written; resolves once they are. */
  tell(): Promise<void> {
    if (this.writing) return this.writing;
    const changed = this.leases().filter((l) => this.told.get(l) !== l.inFlightChanges);
    if (changed.length === 0) return Promise.resolve();
    const figures = changed.map((l) => ({ lease: l, changes: l.inFlightChanges }));
    const rows = changed.map((l) => ({ reservationId: l.reservation.id, inFlightNano: l.inFlight, byKey: new Map(l.inFlightByKey) }));
    this.writing = Promise.resolve()
      .then(() => this.ledger.noteInFlight(rows))
      .then(
        () => {
          for (const f of figures) this.told.set(f.lease, f.changes);
        },
        (e: unknown) => this.log.warn({ err: e }, 'in-flight figures of leases not written; trying again'),
      )
      .finally(() => {
        this.writing = null;
      });
    return this.writing;
  }

  /** Resolves once the figures of now are written: a write already running may carry older ones. */
  async written(): Promise<void> {
    if (this.writing) await this.writing;
    await this.tell();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
