// The ledger's wallet side, each move a transaction of its own; holds and charges are the batcher's (ledger.ts).
import type { Clock } from '../core/clock.ts';
import { errors, hasUnpairedSurrogate } from '../core/errors.ts';
import { toBigInt } from '../core/money.ts';
import type { Db, Queryable } from '../db/db.ts';
import { readWalletFacts } from './batch-sql.ts';
import { planAllows } from './policy.ts';
import { withRetry } from './retry.ts';
import { type KnownVendors, newId, topUpIn } from './top-up.ts';
import type { Ledger, WalletBalance } from './types.ts';
import { readBalances, walletFromRow } from './wallet-rows.ts';

type WalletMethods = Pick<Ledger, 'createWallet' | 'getWallet' | 'setOwner' | 'topUp' | 'balance' | 'usableNano' | 'planAllows'>;

export function walletMethods(db: Db, clock: Clock, vendors: KnownVendors, planVendors: () => readonly string[]): WalletMethods {
  return {
    async createWallet(input = {}) {
      const keySlots = input.keySlots ?? 100;
      if (!Number.isSafeInteger(keySlots) || keySlots < 0)
        throw errors.invalidRequest('key_slots must be a non-negative whole number.', 'key_slots');
      const id = input.id ?? newId('wal');
      const ownerId = input.ownerId ?? newId('usr');
      const credits = input.credits ?? 0;
      return withRetry(() =>
        db.transaction(async (tx) => {
          let r = await tx.query(
            `INSERT INTO wallets (id, owner_id, splits_usage, key_slots, created_at) VALUES ($1, $2, $3, $4, $5::timestamptz) RETURNING *`,
            [id, ownerId, input.splitsUsage ?? false, keySlots, clock.now().toISOString()],
          );
          if (input.name != null) r = await tx.query('UPDATE wallets SET name = $2 WHERE id = $1 RETURNING *', [id, input.name]);
          const lot = (typeof credits === 'bigint' ? credits > 0n : credits > 0)
            ? await topUpIn(clock, tx, id, { credits, beside: input.beside }, vendors)
            : null;
          return { ...walletFromRow(r.rows[0]!), lot };
        }),
      );
    },

    async getWallet(walletId) {
      const r = await db.query('SELECT * FROM wallets WHERE id = $1', [walletId]);
      return r.rows[0] ? walletFromRow(r.rows[0]) : null;
    },

    async setOwner(walletId, ownerId, beside) {
      if (typeof ownerId !== 'string' || ownerId.length === 0 || hasUnpairedSurrogate(ownerId))
        throw errors.invalidRequest('owner_id must be a non-empty string.', 'owner_id');
      const row = await db.transaction(async (tx) => {
        // The previous owner read under the row's lock, so two changes at once each see the one before them.
        const previous = await tx.query<{ owner_id: string }>('SELECT owner_id FROM wallets WHERE id = $1 FOR UPDATE', [walletId]);
        const [before] = previous.rows;
        if (!before) throw errors.notFound(`No wallet '${walletId}'.`);
        // A new owner starts a new generation, ending the old owner's sessions and links (dashboard/sessions.ts).
        const r = await tx.query(
          `UPDATE wallets SET owner_id = $2, owner_generation = owner_generation + (owner_id IS DISTINCT FROM $2)::int
            WHERE id = $1 RETURNING *`,
          [walletId, ownerId],
        );
        if (beside && before.owner_id !== ownerId) await beside(tx, before.owner_id);
        return r.rows[0]!; // the row locked above
      });
      return walletFromRow(row);
    },

    topUp(walletId, input) {
      return withRetry(() => db.transaction((tx) => topUpIn(clock, tx, walletId, input, vendors)));
    },

    balance: (walletId) => readBalance(db, walletId),

    async usableNano(walletId, vendor) {
      const r = await db.query<{ s: string | null }>(
        `SELECT COALESCE(sum(available_nano), 0)::text AS s FROM credit_lots
          WHERE wallet_id = $1 AND (vendors IS NULL OR $2 = ANY(vendors)) AND (expires_at IS NULL OR expires_at > $3::timestamptz)`,
        [walletId, vendor, clock.now().toISOString()],
      );
      return toBigInt(r.rows[0]?.s ?? '0');
    },

    async planAllows(walletId, vendor) {
      const restricted = planVendors();
      if (!restricted.includes(vendor)) return true;
      const facts = (await readWalletFacts(db, [{ walletId, vendor }])).get(walletId, vendor);
      return planAllows(restricted, vendor, facts ?? { anyLot: false, usableLot: false });
    },
  };
}

/** A wallet's balance (the sum of its lots) and lots, read with `q` (a transaction's own connection, if need be). */
export async function readBalance(q: Queryable, walletId: string): Promise<WalletBalance> {
  const balance = (await readBalances(q, [walletId])).get(walletId);
  if (!balance) throw errors.notFound(`No wallet '${walletId}'.`);
  return balance;
}
