// Ledger test helpers shared by the ledger test files.
import { expect } from 'vitest';
import { toBigInt } from '../../engine/core/money.ts';
import type { Queryable } from '../../engine/db/db.ts';
import type { RunningGateway } from '../../engine/gateway.ts';
import type { Ledger } from '../../engine/money/ledger.ts';
import { readBalance } from '../../engine/money/ledger-wallets.ts';
import { LEASE_CALL_PREFIX } from '../../engine/money/types.ts';

/**
 * A wallet as its calls see it on the shipped money path: what it can still spend (what budget leases hold
 * unspent counts as the wallet's) and what its calls in flight hold (their own reservations, and their part of
 * this gateway's leases), what leases' records owe counted spent. One statement, so one snapshot: read apart, a lease going back between the reads
 * showed as a hold for an instant.
 */
export async function walletView(
  gw: Pick<RunningGateway, 'db' | 'leases'>,
  walletId: string,
): Promise<{ spendableNano: bigint; heldNano: bigint }> {
  const r = await gw.db.query<{ available: string; leased: string; own: string; owed: string }>(
    `SELECT coalesce((SELECT sum(l.available_nano) FROM credit_lots l WHERE l.wallet_id = w.id), 0)::text AS available,
            coalesce((SELECT sum(r.amount_nano) FROM reservations r WHERE r.wallet_id = w.id AND r.state = 'held' AND r.call_id LIKE $2), 0)::text AS leased,
            coalesce((SELECT sum(r.amount_nano) FROM reservations r WHERE r.wallet_id = w.id AND r.state = 'held' AND r.call_id NOT LIKE $2), 0)::text AS own,
            coalesce((SELECT sum(u.charged_nano) FROM usage_records u JOIN reservations r ON r.id = u.lease_id
                       WHERE r.wallet_id = w.id AND r.state = 'held'), 0)::text AS owed
       FROM wallets w WHERE w.id = $1`,
    [walletId, `${LEASE_CALL_PREFIX}%`],
  );
  const row = r.rows[0]!;
  // What held leases' records owe is spent (money/lease-records.ts), though their lots pay it when they end.
  return {
    spendableNano: BigInt(row.available) + BigInt(row.leased) - BigInt(row.owed),
    heldNano: BigInt(row.own) + gw.leases.stats().inFlightNano,
  };
}

/** The journal's kinds (the table's check constraint). */
type Kind = 'top_up' | 'reserve' | 'settle' | 'release' | 'expire';

/** What the journal says a wallet holds, in all and per lot, beside what each kind moved in all. */
export async function journalSum(db: Queryable, walletId: string) {
  const r = await db.query<{ lot_id: string; kind: Kind; s: string }>(
    `SELECT lot_id, kind, sum(amount_nano)::text AS s FROM ledger_journal WHERE wallet_id = $1 GROUP BY lot_id, kind`,
    [walletId],
  );
  const none = (): Record<Kind, bigint> => ({ top_up: 0n, reserve: 0n, settle: 0n, release: 0n, expire: 0n });
  const per = new Map<string, Record<Kind, bigint>>();
  const tot = none();
  for (const row of r.rows) {
    const v = toBigInt(row.s);
    const p = per.get(row.lot_id) ?? none();
    p[row.kind] += v;
    per.set(row.lot_id, p);
    tot[row.kind] += v;
  }
  const available = (k: Record<Kind, bigint>) => k.top_up - k.reserve + k.release - k.expire;
  const reserved = (k: Record<Kind, bigint>) => k.reserve - k.settle - k.release;
  return {
    toppedUpNano: tot.top_up,
    reservedTotalNano: tot.reserve,
    chargedNano: tot.settle,
    releasedNano: tot.release,
    expiredNano: tot.expire,
    availableNano: available(tot),
    reservedNano: reserved(tot),
    lots: [...per].map(([lotId, p]) => ({ lotId, availableNano: available(p), reservedNano: reserved(p) })),
  };
}

/** The journal adds up to the balance columns, wallet and lots alike, and money is conserved. */
export async function expectJournalAddsUp(db: Queryable, walletId: string) {
  const bal = await readBalance(db, walletId);
  const sum = await journalSum(db, walletId);
  expect(sum.availableNano).toBe(bal.availableNano);
  expect(sum.reservedNano).toBe(bal.reservedNano);
  expect(bal.availableNano).toBe(bal.lots.reduce((a, l) => a + l.availableNano, 0n));
  expect(bal.reservedNano).toBe(bal.lots.reduce((a, l) => a + l.reservedNano, 0n));
  for (const lot of bal.lots) {
    expect(lot.availableNano >= 0n && lot.reservedNano >= 0n).toBe(true);
    const j = sum.lots.find((x) => x.lotId === lot.id)!;
    expect(j.availableNano).toBe(lot.availableNano);
    expect(j.reservedNano).toBe(lot.reservedNano);
  }
  // granted = available + reserved + charged + expired
  expect(sum.toppedUpNano).toBe(bal.availableNano + bal.reservedNano + sum.chargedNano + sum.expiredNano);
  return { bal, sum };
}

/** The ledger with its draws held back until `open()`, as they would wait behind a slow database. */
export function withDrawsHeld(ledger: Ledger): { ledger: Ledger; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const slow: Ledger = Object.create(ledger, {
    draw: { value: async (...args: Parameters<Ledger['draw']>) => (await gate, ledger.draw(...args)) },
  });
  return { ledger: slow, open };
}

/**
 * What was taken from a lot after its expiry, checked against docs/money.md ("Lots that expire"): no hold placed on
 * it, and no more taken than the calls admitted before it and charged after it cost (a call's hold, its own or its
 * lease's, placed before the expiry is charged as held). A record's instant comes before its batch's, hence the
 * records from a second before the expiry. Returns what is wrong, in words, and the amount taken after it.
 */
export async function takenAfterExpiry(db: Queryable, walletId: string, lotId: string, expiresAt: Date) {
  const problems: string[] = [];
  const late = await db.query<{ kind: string; created_at: Date; at: Date; amount: string }>(
    `SELECT j.kind, r.created_at, j.at, j.amount_nano::text AS amount FROM ledger_journal j
       JOIN reservations r ON r.id = j.reservation_id
      WHERE j.lot_id = $1 AND j.kind IN ('reserve', 'settle') AND j.at >= $2::timestamptz`,
    [lotId, expiresAt.toISOString()],
  );
  let lateNano = 0n;
  for (const row of late.rows) {
    const when = new Date(row.at).toISOString();
    if (row.kind === 'reserve') problems.push(`a hold placed on it at ${when}, after its expiry`);
    else if (new Date(row.created_at).getTime() >= expiresAt.getTime())
      problems.push(`a hold placed at ${new Date(row.created_at).toISOString()} charged to it`);
    else lateNano += toBigInt(row.amount);
  }
  // Calls admitted before it and ended across it, and calls ended before it whose records a lease owed and paid at
  // its end, after the expiry (money/lease-records.ts).
  const across = await db.query<{ n: string }>(
    `SELECT coalesce(sum(charged_nano), 0)::text AS n FROM usage_records
      WHERE wallet_id = $1 AND ((at >= $2::timestamptz - interval '1 second' AND at - duration_ms * interval '1 millisecond' < $2::timestamptz)
                                OR (lease_id IS NOT NULL AND at < $2::timestamptz))`,
    [walletId, expiresAt.toISOString()],
  );
  const acrossNano = toBigInt(across.rows[0]!.n);
  if (lateNano > acrossNano)
    problems.push(`${lateNano} taken after its expiry, more than the ${acrossNano} the calls admitted before it cost`);
  return { problems, lateNano };
}
