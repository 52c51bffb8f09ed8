// How a call's hold ends: settled once at the cost of the usage that was recorded, or released when none was.
import type { FastifyBaseLogger } from 'fastify';
import type { Accounts, Caller, Hold, WithSettle } from '../money/accounts.ts';
import type { Usage } from '../core/types.ts';
import type { LateSettlements } from './late-settlements.ts';

const SETTLE_ATTEMPTS = 3;

/**
 * Settles the hold at `cost`, or releases it when `cost` is null; returns what was charged (a settle handed
 * to `late` counts as charged: it is written once the database answers). Both are idempotent, so a passing
 * database fault is worth a few more tries: a hold left to the sweeper is released, and the vendor's work
 * would go uncharged.
 */
export async function finishHold(
  accounts: Accounts,
  caller: Caller,
  hold: Hold,
  cost: bigint | null,
  log: Pick<FastifyBaseLogger, 'error'>,
  { late, alsoWrite, backoffMs = 50 }: { late?: LateSettlements; alsoWrite?: WithSettle; backoffMs?: number } = {},
): Promise<bigint> {
  for (let attempt = 1; ; attempt++) {
    try {
      if (cost === null) {
        await accounts.release(hold);
        return 0n;
      }
      return await accounts.settle(caller, hold, cost, alsoWrite);
    } catch (e) {
      log.error({ err: e, callId: hold.callId, attempt }, 'settlement failed');
      if (attempt >= SETTLE_ATTEMPTS) {
        // A release can wait for the sweeper; a charge cannot, or the answer would be free.
        if (cost !== null && late) {
          late.add(hold.callId, () => accounts.settle(caller, hold, cost, alsoWrite));
          return cost;
        }
        return 0n;
      }
      await new Promise((r) => setTimeout(r, backoffMs * 2 ** attempt));
    }
  }
}

export interface SettlementDeps {
  accounts: Accounts;
  log: Pick<FastifyBaseLogger, 'error'>;
  /** The cost of the usage in nano-USD, at the catalog's prices. */
  costOf: (usage: Usage) => bigint;
  /** Where a settle the database could not take waits to be written. */
  late?: LateSettlements;
  /** The call's usage record, written by the settle's own transaction. */
  recordOf?: (usage: Usage) => WithSettle;
}

/** Charges once: the usage of the answer the vendor produced, or releases the hold when nothing was recorded. */
export class Settlement {
  private usage: Usage | null = null;
  private settled = false;
  private charged = 0n;

  constructor(
    private readonly caller: Caller,
    private readonly hold: Hold | null,
    private readonly deps: SettlementDeps,
  ) {}

  record(usage: Usage): void {
    this.usage = usage;
  }

  /** Settles once; returns what was charged (0 when released or free). */
  async finish(): Promise<bigint> {
    if (this.settled) return this.charged;
    this.settled = true;
    if (!this.hold) return 0n;
    const cost = this.usage ? this.deps.costOf(this.usage) : null;
    const alsoWrite = this.usage && this.deps.recordOf ? this.deps.recordOf(this.usage) : undefined;
    this.charged = await finishHold(this.deps.accounts, this.caller, this.hold, cost, this.deps.log, { late: this.deps.late, alsoWrite });
    return this.charged;
  }
}
