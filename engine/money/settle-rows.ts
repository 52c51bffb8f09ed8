// What settles write beside their charge, in the batch's transaction (batcher.ts steps 3 and 4): rows grouped
// by writer, one statement per writer, composed into the statement that moves the batch's money; then
// callbacks, one settle at a time, in op order. Grouped, a batch of 64 leased calls writes its money, quota
// counts and usage records with one statement. When a grouped write fails, the batch cannot tell whose row it
// was: it runs again with every settle's rows written on their own, so only the settle at fault fails (what one
// transaction per settle gave).
import type { Queryable } from '../db/db.ts';
import { writeRows, type RowWriter, type SettleRow, type Statement } from '../db/beside-settle.ts';
import type { Alongside } from './types.ts';

/** One settle whose writes are due: who asked (to fail it alone), what it writes, what it charged. */
export interface DueWrite<P> {
  owner: P;
  alongside: Alongside;
  chargedNano: bigint;
}

/** A write of one settle failed: that settle fails, the batch runs again without it. */
export class SettleWriteFailed<P> extends Error {
  constructor(
    readonly owner: P,
    readonly error: unknown,
  ) {
    super('a write beside a settle failed');
  }
}

/** A grouped write failed: the batch runs again writing each settle's rows on their own. */
export class GroupedWriteFailed extends Error {
  constructor(readonly error: unknown) {
    super('a grouped write beside settles failed');
  }
}

/** The statements of the due settles' rows, one per writer in name order (none when `separately`). */
export function groupedStatements<P>(due: readonly DueWrite<P>[], separately: boolean): Statement[] {
  if (separately) return [];
  const groups = new Map<RowWriter<unknown>, SettleRow<unknown>[]>();
  for (const d of due) {
    if (typeof d.alongside === 'function') continue;
    for (const { writer, item } of d.alongside) {
      let rows = groups.get(writer);
      if (!rows) groups.set(writer, (rows = []));
      rows.push({ item, chargedNano: d.chargedNano });
    }
  }
  const ordered = [...groups].sort(([a], [b]) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return ordered.flatMap(([writer, rows]) => writer.statement(rows) ?? []);
}

/**
 * Writes what the due settles write that `groupedStatements` did not: callbacks, and, `separately`, each
 * settle's rows on their own (after a grouped failure).
 */
export async function writeBesideSettles<P>(tx: Queryable, due: readonly DueWrite<P>[], separately: boolean): Promise<void> {
  for (const d of due) {
    try {
      if (typeof d.alongside === 'function') await d.alongside(tx, d.chargedNano);
      else if (separately) for (const { writer, item } of d.alongside) await writeRows(tx, writer, [{ item, chargedNano: d.chargedNano }]);
    } catch (e) {
      throw new SettleWriteFailed(d.owner, e);
    }
  }
}
