// Rows written beside a settle, in its transaction: the key's quota count (keys/), the call's usage record
// (usage/). The rooms that own those tables say how their rows are written; the ledger (money/settle-rows.ts)
// groups the rows of all the settles of one batch, and writes them in the statement that moves the money, so
// a batch's quota counts and usage records cost no round trip of their own.
import type { Queryable } from './db.ts';

/** One settle's row for a `RowWriter`, with what that settle charged. */
export interface SettleRow<T> {
  item: T;
  chargedNano: bigint;
}

/**
 * One data-modifying SQL statement with its parameters ($1…$n), fit to run alone or as a CTE of a larger
 * statement (whose parameters are renumbered: `$` followed by digits may appear nowhere else in `sql`).
 */
export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * Writes rows beside settles, in their transaction, all of a batch's rows at once: `statement` says how
 * (null: nothing to write). Writers are composed in `name` order, so every process touches their tables in
 * the same order.
 */
export interface RowWriter<T> {
  readonly name: string;
  statement(rows: readonly SettleRow<T>[]): Statement | null;
}

/** Runs a writer's statement for `rows` on its own. */
export async function writeRows<T>(tx: Queryable, writer: RowWriter<T>, rows: readonly SettleRow<T>[]): Promise<void> {
  const s = writer.statement(rows);
  if (s) await tx.query(s.sql, s.params);
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
