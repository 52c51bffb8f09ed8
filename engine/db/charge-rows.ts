// Charge rows: rows written in a charge's own transaction with what it charged (docs/glossary.md). Each room that
// owns such a table says how its rows are written, and the ledger writes a batch's rows in the statement that moves
// the money, so usage records and their rollup (which the keys' quotas sum) cost no round trip of their own.
import type { Queryable } from './db.ts';

/** A charge row's item as its writer receives it, with what that row's charge charged. */
export interface ChargedItem<T> {
  item: T;
  chargedNano: bigint;
  /** The id of the charge that writes the row (a draw's id, or the settled reservation's); absent outside the ledger. */
  transferId?: string;
  /** The lease the charge is owed on, applied to the balances when the lease ends (money/lease-records.ts). */
  leaseId?: string | undefined;
}

/**
 * One data-modifying SQL statement with its parameters ($1…$n), fit to run alone or as a CTE of a larger
 * statement (whose parameters are renumbered: `$` followed by digits may appear nowhere else in `sql`).
 */
export interface Statement {
  sql: string;
  params: unknown[];
}

/** The SELECT of the `transfer_id`s among `ids` a writer recorded in [`since`, `until`): the three are `$n` placeholders. */
export type TransferLookup = (ids: string, since: string, until: string) => string;

/**
 * How a row that records its charge's id is found again: `look` searches the instants around the rows' own
 * (`at`, read from the item), so a charge written again finds its row however late, and on whichever clock.
 */
interface TransferRecord<T> {
  readonly look: TransferLookup;
  at(item: T): Date;
}

/**
 * Writes one table's charge rows, in their charges' transaction, all of a batch's rows at once: `statement`
 * says how (null: nothing to write). Writers are composed in `name` order, so every process touches their
 * tables in the same order.
 */
export interface ChargeRowWriter<T> {
  readonly name: string;
  statement(rows: readonly ChargedItem<T>[]): Statement | null;
  /**
   * A writer whose row records its charge's id durably says how to find it again. A draw whose rows include such
   * a row needs no row of its own to be recognised when it is written again (money/batch-sql.ts).
   */
  readonly transfersRecorded?: TransferRecord<T>;
  /**
   * The key's quotas are summed from this writer's rows (the daily rollup): when a charge's rows are refused for
   * good, the charge is tried again with these alone before none, so the key's use still counts it.
   */
  readonly countsKeyUse?: boolean;
  /**
   * This writer's row is `usage_records` with the lease's id in `lease_id`, which a lease's end sums: a draw among
   * whose rows it is may be written as that row alone, owed on its lease (money/lease-records.ts).
   */
  readonly owesOnLease?: boolean;
}

/** Runs a writer's statement for `rows` on its own. */
export async function writeChargeRows<T>(tx: Queryable, writer: ChargeRowWriter<T>, rows: readonly ChargedItem<T>[]): Promise<void> {
  const s = writer.statement(rows);
  if (s) await tx.query(s.sql, s.params);
}

/** One charge row: an item for a writer, its type erased so the rows of several writers travel in one list (made by `chargeRow`). */
export interface ChargeRow {
  readonly writer: ChargeRowWriter<unknown>;
  readonly item: unknown;
}

/** The charge rows one charge writes (its usage record and rollup, which its key's quotas sum). */
export type ChargeRows = readonly ChargeRow[];

/** A charge row for `writer`, typed where it is made and erased to travel in one list with rows of other writers. */
export function chargeRow<T>(writer: ChargeRowWriter<T>, item: T): ChargeRow {
  return { writer: writer as unknown as ChargeRowWriter<unknown>, item };
}
