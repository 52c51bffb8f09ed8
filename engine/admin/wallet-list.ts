// GET /admin/v1/wallets and `gateway wallet list`: wallets in creation order, a page at a time. The cursor
// is opaque to callers (base64url of the last wallet's position); a page is read in three queries
// (wallets, their lots, their key counts) however long it is.
import type { Db } from '../db/db.ts';
import { errors } from '../core/errors.ts';
import { countSlotKeysOf } from '../keys/store.ts';
import { readBalances, readWalletPage, type WalletPosition } from '../money/wallet-rows.ts';
import { walletViewFrom, type WalletView } from './wallet-view.ts';
import { readLeasedByLot, spendableBalance } from '../money/spendable.ts';

const DEFAULT_PAGE = 50;
const MAX_PAGE = 200;

interface WalletPageRequest {
  limit: number;
  after: WalletPosition | null;
}

export interface WalletPage {
  data: WalletView[];
  has_more: boolean;
  next_cursor: string | null;
}

const POSITION_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

const encodeCursor = (p: WalletPosition): string => Buffer.from(JSON.stringify([p.createdAt, p.id]), 'utf8').toString('base64url');

function decodeCursor(cursor: string): WalletPosition {
  const bad = () =>
    errors.invalidRequest('cursor is not one this API gave out; pass next_cursor from the previous page as it is.', 'cursor');
  if (!/^[A-Za-z0-9_-]{1,1000}$/.test(cursor)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) throw bad();
  const [createdAt, id] = parsed as unknown[];
  // Checked here so that no text the database would refuse as a timestamp reaches it.
  if (typeof createdAt !== 'string' || !POSITION_AT.test(createdAt) || Number.isNaN(Date.parse(createdAt))) throw bad();
  // A real calendar instant (not 30 February), from year 1: PostgreSQL has no year 0 (22008).
  if (createdAt.startsWith('0000') || new Date(Date.parse(createdAt)).toISOString().slice(0, 19) !== createdAt.slice(0, 19)) throw bad();
  if (typeof id !== 'string' || id === '' || id.length > 200 || id.includes('\u0000')) throw bad();
  return { createdAt, id };
}

/** `limit` and `cursor` as a query string or the command line gives them (text, or absent). */
export function parseWalletPageRequest(query: { limit?: unknown; cursor?: unknown }): WalletPageRequest {
  const one = (v: unknown) => (Array.isArray(v) ? v[v.length - 1] : v);
  const limitText = one(query.limit);
  let limit = DEFAULT_PAGE;
  if (limitText !== undefined && limitText !== '') {
    if (typeof limitText !== 'string' || !/^\d{1,6}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_PAGE) {
      throw errors.invalidRequest(`limit must be a whole number from 1 to ${MAX_PAGE} (default ${DEFAULT_PAGE}).`, 'limit');
    }
    limit = Number(limitText);
  }
  const cursor = one(query.cursor);
  if (cursor !== undefined && typeof cursor !== 'string') throw errors.invalidRequest('cursor must be a string.', 'cursor');
  return { limit, after: cursor === undefined || cursor === '' ? null : decodeCursor(cursor) };
}

/** One page; `today` is the Korean date for the key counts. */
export async function listWallets(db: Db, req: WalletPageRequest, today: string): Promise<WalletPage> {
  // One more than asked tells whether another page follows without a count of the whole table.
  const rows = await readWalletPage(db, req.limit + 1, req.after);
  const page = rows.slice(0, req.limit);
  const ids = page.map((r) => r.wallet.id);
  const [balances, leased, keyCounts] = await Promise.all([
    readBalances(db, ids),
    readLeasedByLot(db, ids),
    countSlotKeysOf(db, ids, today),
  ]);
  const data = page.flatMap((r) => {
    const bal = balances.get(r.wallet.id);
    return bal ? [walletViewFrom(r.wallet, spendableBalance(bal, leased), keyCounts.get(r.wallet.id) ?? 0)] : [];
  });
  const hasMore = rows.length > req.limit;
  return { data, has_more: hasMore, next_cursor: hasMore ? encodeCursor(page[page.length - 1].position) : null };
}
