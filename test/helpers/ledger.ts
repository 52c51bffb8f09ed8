// Ledger test helpers shared by the ledger test files.
import { expect } from 'vitest';
import type { RunningGateway } from '../../engine/gateway.ts';
import type { Ledger } from '../../engine/money/ledger.ts';
import { LEASE_CALL_PREFIX } from '../../engine/money/types.ts';

/**
 * A wallet as its calls see it on the shipped money path: what it can still spend (what budget leases hold
 * unspent counts as the wallet's) and what its calls in flight hold (their own reservations, and their part of
 * this gateway's leases). One statement, so one snapshot: read apart, a lease going back between the reads
 * showed as a hold for an instant.
 */
export async function walletView(
  gw: Pick<RunningGateway, 'db' | 'leases'>,
  walletId: string,
): Promise<{ spendableNano: bigint; heldNano: bigint }> {
  const r = await gw.db.query<{ available: string; leased: string; own: string }>(
    `SELECT coalesce((SELECT sum(l.available_nano) FROM credit_lots l WHERE l.wallet_id = w.id), 0)::text AS available,
            coalesce((SELECT sum(r.amount_nano) FROM reservations r WHERE r.wallet_id = w.id AND r.state = 'held' AND r.call_id LIKE $2), 0)::text AS leased,
            coalesce((SELECT sum(r.amount_nano) FROM reservations r WHERE r.wallet_id = w.id AND r.state = 'held' AND r.call_id NOT LIKE $2), 0)::text AS own
       FROM wallets w WHERE w.id = $1`,
    [walletId, `${LEASE_CALL_PREFIX}%`],
  );
  const row = r.rows[0]!;
  return { spendableNano: BigInt(row.available) + BigInt(row.leased), heldNano: BigInt(row.own) + gw.leases.stats().inFlightNano };
}

/** The journal adds up to the balance columns, wallet and lots alike, and money is conserved. */
export async function expectJournalAddsUp(ledger: Ledger, walletId: string) {
  const bal = await ledger.balance(walletId);
  const sum = await ledger.journalSum(walletId);
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
