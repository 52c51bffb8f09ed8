// What the journal says a wallet holds, summed per lot and kind: the audit and the tests compare it with the
// lots' and the wallet's columns, which must agree (docs/money.md, invariants).
import { toBigInt } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';
import type { JournalSum } from './types.ts';

/** The journal's kinds (the table's check constraint). */
type Kind = 'top_up' | 'reserve' | 'settle' | 'release' | 'expire';

export async function journalSum(db: Queryable, walletId: string): Promise<JournalSum> {
  const r = await db.query<{ lot_id: string; kind: Kind; s: string }>(
    `SELECT lot_id, kind, sum(amount_nano)::text AS s FROM ledger_journal WHERE wallet_id = $1 GROUP BY lot_id, kind`,
    [walletId],
  );
  const per = new Map<string, Record<Kind, bigint>>();
  const tot: Record<Kind, bigint> = { top_up: 0n, reserve: 0n, settle: 0n, release: 0n, expire: 0n };
  for (const row of r.rows) {
    const v = toBigInt(row.s);
    const p = per.get(row.lot_id) ?? { top_up: 0n, reserve: 0n, settle: 0n, release: 0n, expire: 0n };
    p[row.kind] += v;
    per.set(row.lot_id, p);
    tot[row.kind] += v;
  }
  return {
    toppedUpNano: tot.top_up,
    reservedTotalNano: tot.reserve,
    chargedNano: tot.settle,
    releasedNano: tot.release,
    expiredNano: tot.expire,
    availableNano: tot.top_up - tot.reserve + tot.release - tot.expire,
    reservedNano: tot.reserve - tot.settle - tot.release,
    lots: [...per.entries()].map(([lotId, p]) => ({
      lotId,
      availableNano: p.top_up - p.reserve + p.release - p.expire,
      reservedNano: p.reserve - p.settle - p.release,
    })),
  };
}
