// The district overview's reads: a page of wallets (sorted, or in creation order), and each wallet's month spend
// and last call, read from the daily rollup and the keys' last use so the overview never scans usage records.

import { toBigInt } from '../core/money.ts';
import type { Queryable } from '../db/db.ts';
import { activeWhere, doorKeyWhere } from '../keys/store.ts';
import type { Wallet } from '../money/ledger.ts';
import { walletFromRow } from '../money/wallet-rows.ts';

export interface WalletUse {
  monthSpentNano: bigint;
  lastCallAt: string | null;
}

/** The first Korean day of the month `today` (a Korean date, YYYY-MM-DD) falls in. */
const monthStartOf = (today: string): string => `${today.slice(0, 7)}-01`;

const MONTH_SPEND = `SELECT wallet_id, sum(charged_nano) AS nano FROM usage_daily WHERE day >= $1::date GROUP BY wallet_id`;
const LAST_CALL = `SELECT wallet_id, max(last_used_at) AS at FROM api_keys WHERE kind = 'api' GROUP BY wallet_id`;

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string | Date).toISOString());

/** This month's spend and the last call of these wallets: two queries, whatever their number. */
export async function readWalletUse(q: Queryable, walletIds: string[], today: string): Promise<Map<string, WalletUse>> {
  const out = new Map<string, WalletUse>(walletIds.map((id) => [id, { monthSpentNano: 0n, lastCallAt: null }]));
  if (walletIds.length === 0) return out;
  const [spent, last] = await Promise.all([
    q.query<{ wallet_id: string; nano: string }>(
      `SELECT wallet_id, sum(charged_nano)::text AS nano FROM usage_daily
        WHERE wallet_id = ANY($2::text[]) AND day >= $1::date GROUP BY wallet_id`,
      [monthStartOf(today), walletIds],
    ),
    q.query<{ wallet_id: string; at: unknown }>(
      `SELECT wallet_id, max(last_used_at) AS at FROM api_keys WHERE kind = 'api' AND wallet_id = ANY($1::text[]) GROUP BY wallet_id`,
      [walletIds],
    ),
  ]);
  for (const r of spent.rows) {
    const use = out.get(r.wallet_id);
    if (use) use.monthSpentNano = toBigInt(r.nano);
  }
  for (const r of last.rows) {
    const use = out.get(r.wallet_id);
    if (use) use.lastCallAt = iso(r.at);
  }
  return out;
}

/** What the overview sorts by (`sort`; a leading `-` for largest or latest first). */
export const WALLET_SORTS = ['created_at', 'name', 'credits', 'month_spent', 'last_call_at', 'keys_active'] as const;
export type WalletSort = (typeof WALLET_SORTS)[number];

const SORT_SQL: Record<WalletSort, string> = {
  created_at: 'w.created_at',
  name: 'lower(w.name)',
  // What the lots have available: what budget leases hold is counted back in the view, not in this order.
  credits: 'coalesce(b.nano, 0)',
  month_spent: 'coalesce(s.nano, 0)',
  last_call_at: 'l.at',
  keys_active: 'coalesce(k.n, 0)',
};

/**
 * One page of every wallet in `sort` order (ties by id), `offset` wallets in: a sorted overview reads the
 * aggregates of all wallets in one query, which suits the hundreds of schools of a district.
 */
export async function readSortedWallets(
  q: Queryable,
  o: { sort: WalletSort; descending: boolean; limit: number; offset: number; today: string },
): Promise<Wallet[]> {
  const dir = o.descending ? 'DESC' : 'ASC';
  const res = await q.query(
    `SELECT w.* FROM wallets w
       LEFT JOIN (${MONTH_SPEND}) s ON s.wallet_id = w.id
       LEFT JOIN (${LAST_CALL}) l ON l.wallet_id = w.id
       LEFT JOIN (SELECT wallet_id, sum(available_nano) AS nano FROM credit_lots GROUP BY wallet_id) b ON b.wallet_id = w.id
       LEFT JOIN (SELECT k.wallet_id, count(*) AS n FROM api_keys k WHERE ${doorKeyWhere} AND ${activeWhere('$4')}
                   GROUP BY k.wallet_id) k ON k.wallet_id = w.id
      ORDER BY ${SORT_SQL[o.sort]} ${dir} NULLS LAST, w.id ${dir}
      LIMIT $2 OFFSET $3`,
    [monthStartOf(o.today), o.limit, o.offset, o.today],
  );
  return res.rows.map(walletFromRow);
}

/**
 * Where a page of wallets starts: after this wallet in (created_at, id) order. `createdAt` is the
 * database's own text of the instant, to the microsecond, so a wallet made within the same millisecond
 * as the last one shown is neither skipped nor repeated.
 */
export interface WalletPosition {
  createdAt: string;
  id: string;
}

interface WalletPageRow {
  wallet: Wallet;
  position: WalletPosition;
}

/** Up to `limit` wallets after `after` (from the first when null), oldest first. */
export async function readWalletPage(q: Queryable, limit: number, after: WalletPosition | null): Promise<WalletPageRow[]> {
  const res = await q.query(
    `SELECT w.*, to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position_at
       FROM wallets w
      WHERE $1::timestamptz IS NULL OR (w.created_at, w.id) > ($1::timestamptz, $2::text)
      ORDER BY w.created_at, w.id
      LIMIT $3`,
    [after?.createdAt ?? null, after?.id ?? null, limit],
  );
  return res.rows.map((r) => ({ wallet: walletFromRow(r), position: { createdAt: String(r.position_at), id: String(r.id) } }));
}
