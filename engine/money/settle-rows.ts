// What settles write beside their charge, in the batch's transaction (batcher.ts step 4): callbacks one
// settle at a time, in op order, then rows grouped by writer, one `writeMany` per writer in name order.
// Grouped, a batch of 64 leased calls writes its quota counts and usage records with two statements
// instead of 128. When a grouped write fails, the batch cannot tell whose row it was: it runs again with
// every settle's rows written on their own, so only the settle at fault fails (what one transaction per
// settle gave).
import type { Queryable } from '../db/db.ts';
import type { RowWriter, SettleRow } from '../db/beside-settle.ts';
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

/** Writes what the due settles write. `separately`: each settle's rows on their own (after a grouped failure). */
export async function writeBesideSettles<P>(tx: Queryable, due: readonly DueWrite<P>[], separately: boolean): Promise<void> {
  const groups = new Map<RowWriter<unknown>, { rows: SettleRow<unknown>[]; owners: Set<P> }>();
  for (const d of due) {
    if (typeof d.alongside === 'function') {
      try {
        await d.alongside(tx, d.chargedNano);
      } catch (e) {
        throw new SettleWriteFailed(d.owner, e);
      }
      continue;
    }
    for (const { writer, item } of d.alongside) {
      if (separately) {
        try {
          await writer.writeMany(tx, [{ item, chargedNano: d.chargedNano }]);
        } catch (e) {
          throw new SettleWriteFailed(d.owner, e);
        }
        continue;
      }
      let g = groups.get(writer);
      if (!g) groups.set(writer, (g = { rows: [], owners: new Set() }));
      g.rows.push({ item, chargedNano: d.chargedNano });
      g.owners.add(d.owner);
    }
  }
  const ordered = [...groups].sort(([a], [b]) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const [writer, { rows, owners }] of ordered) {
    try {
      await writer.writeMany(tx, rows);
    } catch (e) {
      if (owners.size === 1) throw new SettleWriteFailed([...owners][0], e);
      throw new GroupedWriteFailed(e);
    }
  }
}
