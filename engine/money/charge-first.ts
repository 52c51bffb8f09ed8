// A charge comes before its charge rows: rows refused for good would undo it on every attempt, so it is tried again
// with fewer (docs/decisions/charge-writer.md, "The charge before its rows").
import type { ChargeRows } from '../db/charge-rows.ts';
import type { MoneyLog } from './types.ts';

/**
 * SQLSTATE classes 22 (data exception), 23 (integrity constraint violation) and 54 (program limit exceeded, such as a
 * value too long for its index): the same rows would be refused again.
 */
const REFUSED_FOR_GOOD = ['22', '23', '54'];

function isRefusedForGood(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && REFUSED_FOR_GOOD.includes(code.slice(0, 2));
}

/** A charge's rows from all to none (undefined), a step down per refusal for good; other failures are retried with the same rows. */
export class ChargeRowLadder {
  private at = 0;

  constructor(
    readonly steps: readonly (ChargeRows | undefined)[],
    private readonly log: Pick<MoneyLog, 'error'>,
    private readonly callId: string,
  ) {}

  get current(): ChargeRows | undefined {
    return this.steps[this.at];
  }

  /** After `e`: true when a smaller set of rows is to be tried (the charge is then attempted again at once). */
  fewerAfter(e: unknown): boolean {
    if (!isRefusedForGood(e) || this.at >= this.steps.length - 1) return false;
    this.at++;
    this.log.error(
      { err: e, callId: this.callId, rowsLeft: this.at === this.steps.length - 1 ? 'none' : 'key use' },
      'rows beside a charge were refused: charging with fewer',
    );
    return true;
  }
}

/** All rows, then only those the key's use is summed from (when fewer), then none; the spool's replay steps down alike. */
export function ladderFor(rows: ChargeRows | undefined, log: Pick<MoneyLog, 'error'>, callId: string): ChargeRowLadder {
  const all = rows ?? [];
  const counted = all.filter((r) => r.writer.countsKeyUse === true);
  const steps = counted.length > 0 && counted.length < all.length ? [all, counted, undefined] : [all, undefined];
  return new ChargeRowLadder(steps, log, callId);
}

/** Runs `charge` with the ladder's rows, stepping down to fewer when they are refused for good. */
export async function chargeFirst<T>(ladder: ChargeRowLadder, charge: (rows: ChargeRows | undefined) => Promise<T>): Promise<T> {
  for (let step = 1; step < ladder.steps.length; step++) {
    try {
      return await charge(ladder.current);
    } catch (e) {
      if (!ladder.fewerAfter(e)) throw e;
    }
  }
  return charge(ladder.current);
}
