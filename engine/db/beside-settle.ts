// Rows written beside a settle, in its transaction: the key's quota count (keys/), the call's usage record
// (usage/). The rooms that own those tables write them; the ledger (money/settle-rows.ts) groups the rows
// of all the settles of one batch, so each writer runs one statement per batch.
import type { Queryable } from './db.ts';

/** One settle's row for a `RowWriter`, with what that settle charged. */
export interface SettleRow<T> {
  item: T;
  chargedNano: bigint;
}

/**
 * Writes rows beside settles, in their transaction, all of a batch's rows at once. Writers run in `name`
 * order, so every process locks what they touch in the same order.
 */
export interface RowWriter<T> {
  readonly name: string;
  writeMany(tx: Queryable, rows: readonly SettleRow<T>[]): Promise<void>;
}

/** A row for a writer, its type erased so the rows of several writers travel in one list (made by `besideSettle`). */
export interface BesideSettle {
  readonly writer: RowWriter<unknown>;
  readonly item: unknown;
}

/** A row for `writer`, typed where it is made and erased to travel beside rows of other writers. */
export function besideSettle<T>(writer: RowWriter<T>, item: T): BesideSettle {
  return { writer: writer as unknown as RowWriter<unknown>, item };
}
