// Money in: a top-up adds a credit lot and its journal `top_up` row, in the caller's transaction.

import { randomBytes } from 'node:crypto';
import { impossibleDate } from '../catalog/catalog-dates.ts';
import type { Clock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { creditsToNano } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';
import type { LotBalance, TopUpInput } from './types.ts';
import { lotFromRow } from './wallet-rows.ts';

export const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** The vendors a restricted lot may name: config/vendors.yaml's keys, or a pattern of ids where none are given. */
export type KnownVendors = () => readonly string[] | RegExp;

/** Where no vendor list is given (tests, the bench): any id a vendors.yaml key could be. */
export const ANY_VENDOR: KnownVendors = () => /^[a-z][a-z0-9]*$/;

/** Checked against `known`; null when the lot serves every vendor. */
function normalizeVendors(vendors: string[] | null | undefined, known: KnownVendors): string[] | null {
  if (vendors === null || vendors === undefined) return null;
  if (!Array.isArray(vendors) || vendors.length === 0)
    throw errors.invalidRequest('vendors must be a non-empty array of vendor ids, or omitted.', 'vendors');
  const ids = known();
  const out = new Set<string>();
  for (const v of vendors) {
    const s = typeof v === 'string' ? v.trim().toLowerCase() : '';
    if (ids instanceof RegExp ? !ids.test(s) : !ids.includes(s)) {
      const use = ids instanceof RegExp ? 'vendor ids are lowercase letters and digits' : `use ${ids.join(', ')}`;
      throw errors.invalidRequest(`vendors: '${String(v)}' is not a vendor; ${use}.`, 'vendors');
    }
    out.add(s);
  }
  return [...out].sort();
}

/** Timestamps a client may send: ISO 8601 with a date, a time and an offset (Z or ±hh:mm). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

/** An instant without its offset is refused, not read in the server's zone: Seoul and UTC differ by nine hours. */
export function expiresAtFrom(value: unknown): Date | null {
  if (value === undefined || value === null) return null;
  const d = typeof value === 'string' && ISO_INSTANT.test(value) ? new Date(value) : null;
  if (!d || Number.isNaN(d.getTime()))
    throw errors.invalidRequest('expires_at must be an ISO 8601 instant with its offset, such as 2027-02-28T23:59:59+09:00.', 'expires_at');
  // A day the calendar lacks (2030-02-30) would be read as another (2030-03-02): refused, not moved.
  const why = impossibleDate((value as string).slice(0, 10));
  if (why) throw errors.invalidRequest(`expires_at ${JSON.stringify(value)} is not a calendar date: ${why}.`, 'expires_at');
  return d;
}

const TOP_UP_SQL = `
INSERT INTO ledger_journal (wallet_id, lot_id, reservation_id, kind, amount_nano, at)
VALUES ($1, $2, NULL, 'top_up', $3::bigint, $4::timestamptz)`;

/** The largest balance a wallet may hold: its lots' sum stays a bigint wherever it is read as one. */
const MAX_WALLET_NANO = 2n ** 63n - 1n;

/** `vendors`: the ids a restricted lot may name. */
export async function topUpIn(
  clock: Clock,
  tx: Queryable,
  walletId: string,
  input: TopUpInput,
  vendors: KnownVendors,
): Promise<LotBalance> {
  let nano: bigint;
  if (input.nano !== undefined && input.credits !== undefined) throw errors.invalidRequest('Send credits or nano, not both.');
  if (input.nano !== undefined) {
    if (typeof input.nano !== 'bigint') throw errors.invalidRequest('nano must be an integer.');
    nano = input.nano;
  } else if (input.credits !== undefined) {
    try {
      nano = creditsToNano(input.credits);
    } catch {
      throw errors.invalidRequest('credits must be a positive whole number.', 'credits');
    }
  } else {
    throw errors.invalidRequest('credits is required.', 'credits');
  }
  if (nano <= 0n) throw errors.invalidRequest('credits must be a positive whole number.', 'credits');
  const lotVendors = normalizeVendors(input.vendors, vendors);
  const at = clock.now();
  const expiresAt = input.expiresAt ?? null;
  if (expiresAt !== null && !(expiresAt instanceof Date && expiresAt.getTime() > at.getTime()))
    throw errors.invalidRequest('expires_at must be in the future.', 'expires_at');
  const id = newId('lot');
  const ins = await tx.query(
    `INSERT INTO credit_lots (id, wallet_id, vendors, granted_nano, available_nano, created_at, expires_at, label)
     SELECT $1, w.id, $3::text[], $4::bigint, $4::bigint, $5::timestamptz, $6::timestamptz, $7 FROM wallets w WHERE w.id = $2
     RETURNING *`,
    [id, walletId, lotVendors, nano.toString(), at.toISOString(), expiresAt?.toISOString() ?? null, input.label ?? null],
  );
  if (ins.rows.length === 0) throw errors.notFound(`No wallet '${walletId}'.`);
  // The lot's own balance is the insert's; the wallet's is the sum of its lots, which must stay a bigint.
  const total = await tx.query<{ n: string }>(
    'SELECT coalesce(sum(available_nano + reserved_nano), 0)::text AS n FROM credit_lots WHERE wallet_id = $1',
    [walletId],
  );
  if (BigInt(total.rows[0]?.n ?? '0') > MAX_WALLET_NANO)
    throw errors.invalidRequest('credits: this top-up would take the wallet past the largest balance it can hold.', 'credits');
  await tx.query(TOP_UP_SQL, [walletId, id, nano.toString(), at.toISOString()]);
  const lot = lotFromRow(ins.rows[0]!);
  if (input.beside) await input.beside(tx, lot);
  return lot;
}
