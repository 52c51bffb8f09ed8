// A charge comes before its charge rows: rows the database refuses for good would otherwise undo the charge on
// every attempt and leave the vendor's work unpaid, so the charge is tried again with fewer rows
// (docs/decisions/charge-writer.md, "The charge before its rows").
import type { ChargeRows, MoneyLog } from './types.ts';

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation): the same rows would be refused again. */
function isRefusedForGood(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/**
 * The ladder of charge rows a charge writes, from all of them to none (undefined). Each step is tried when the
 * one before was refused for good; anything else (a lost connection, a deadlock) is the caller's to retry with
 * the same rows.
 */
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

/**
 * The ladder of a charge's rows: all of them, then only those the key's use is summed from (when that is fewer),
 * then none. The live charge and the spool's replay of it step down alike.
 */
export function ladderFor(rows: ChargeRows | undefined, log: Pick<MoneyLog, 'error'>, callId: string): ChargeRowLadder {
  const all = rows ?? [];
  const counted = all.filter((r) => r.writer.countsKeyUse === true);
  const steps = counted.length > 0 && counted.length < all.length ? [all, counted, undefined] : [all, undefined];
  return new ChargeRowLadder(steps, log, callId);
}

/** Runs `charge` with the ladder's rows, stepping down to fewer when they are refused for good. */
export async function chargeFirst<T>(ladder: ChargeRowLadder, charge: (rows: ChargeRows | undefined) => Promise<T>): Promise<T> {
  // Each try steps down the ladder or ends it: one try per step, the last with no rows.
  for (let step = 1; step < ladder.steps.length; step++) {
    try {
      return await charge(ladder.current);
    } catch (e) {
      if (!ladder.fewerAfter(e)) throw e;
    }
  }
  return charge(ladder.current);
}
