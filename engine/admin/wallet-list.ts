// The district overview, a page at a time, with an opaque cursor that is the last wallet's place in the order asked,
// so a page is read in a few queries however long the list.

import { errors } from '../core/errors.ts';
import type { DisplayCurrency } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import { countSlotKeysOf } from '../keys/store.ts';
import type { Wallet } from '../money/ledger.ts';
import { spendablesOf } from '../money/spendable.ts';
import { readSortedWallets, readWalletPage, readWalletUse, WALLET_SORTS, type WalletPosition, type WalletSort } from './wallet-overview.ts';
import { type WalletView, walletViewFrom } from './wallet-view.ts';

const DEFAULT_PAGE = 50;
const MAX_PAGE = 200;

interface WalletPageRequest {
  limit: number;
  sort: { by: WalletSort; descending: boolean } | null;
  /** Where the page starts: after a position (creation order) or an offset into the sorted order. */
  after: WalletPosition | null;
  offset: number;
}

export interface WalletPage {
  data: WalletView[];
  has_more: boolean;
  next_cursor: string | null;
}

const POSITION_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

const encode = (v: unknown[]): string => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');
const sortText = (s: NonNullable<WalletPageRequest['sort']>) => `${s.descending ? '-' : ''}${s.by}`;

function decodeCursor(cursor: string, sort: WalletPageRequest['sort']): Pick<WalletPageRequest, 'after' | 'offset'> {
  const bad = () =>
    errors.invalidRequest(
      'cursor is not one this API gave out; pass next_cursor from the previous page as it is, with the same sort.',
      'cursor',
    );
  if (!/^[A-Za-z0-9_-]{1,1000}$/.test(cursor)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (sort) {
    // A sorted page's cursor: ["sort", the sort it was given for, the offset of the next page].
    if (!Array.isArray(parsed) || parsed.length !== 3 || parsed[0] !== 'sort' || parsed[1] !== sortText(sort)) throw bad();
    if (!Number.isSafeInteger(parsed[2]) || (parsed[2] as number) < 0) throw bad();
    return { after: null, offset: parsed[2] as number };
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) throw bad();
  const [createdAt, id] = parsed as unknown[];
  // Checked here so that no text the database would refuse as a timestamp reaches it.
  if (typeof createdAt !== 'string' || !POSITION_AT.test(createdAt) || Number.isNaN(Date.parse(createdAt))) throw bad();
  // A real calendar instant (not 30 February), from year 1: PostgreSQL has no year 0 (22008).
  if (createdAt.startsWith('0000') || new Date(Date.parse(createdAt)).toISOString().slice(0, 19) !== createdAt.slice(0, 19)) throw bad();
  if (typeof id !== 'string' || id === '' || id.length > 200 || id.includes('\u0000')) throw bad();
  return { after: { createdAt, id }, offset: 0 };
}

function parseSort(v: unknown): WalletPageRequest['sort'] {
  if (v === undefined || v === '') return null;
  const text = typeof v === 'string' ? v : '';
  const by = text.replace(/^-/, '') as WalletSort;
  if (!WALLET_SORTS.includes(by)) {
    throw errors.invalidRequest(`sort must be one of ${WALLET_SORTS.join(', ')}, with a leading - for largest or latest first.`, 'sort');
  }
  return { by, descending: text.startsWith('-') };
}

/** `limit`, `cursor` and `sort` as a query string or the command line gives them (text, or absent). */
export function parseWalletPageRequest(query: { limit?: unknown; cursor?: unknown; sort?: unknown }): WalletPageRequest {
  const one = (v: unknown) => (Array.isArray(v) ? v[v.length - 1] : v);
  const limitText = one(query.limit);
  let limit = DEFAULT_PAGE;
  if (limitText !== undefined && limitText !== '') {
    if (typeof limitText !== 'string' || !/^\d{1,6}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_PAGE) {
      throw errors.invalidRequest(`limit must be a whole number from 1 to ${MAX_PAGE} (default ${DEFAULT_PAGE}).`, 'limit');
    }
    limit = Number(limitText);
  }
  const sort = parseSort(one(query.sort));
  const cursor = one(query.cursor);
  if (cursor !== undefined && typeof cursor !== 'string') throw errors.invalidRequest('cursor must be a string.', 'cursor');
  const start = cursor === undefined || cursor === '' ? { after: null, offset: 0 } : decodeCursor(cursor, sort);
  return { limit, sort, ...start };
}

/** The views of these wallets, in their order: a few queries whatever their number. */
async function viewsOf(db: Db, wallets: Wallet[], today: string, currency: DisplayCurrency | null, now?: Date): Promise<WalletView[]> {
  const ids = wallets.map((w) => w.id);
  const [balances, keyCounts, use] = await Promise.all([
    spendablesOf(db, ids, now),
    countSlotKeysOf(db, ids, today),
    readWalletUse(db, ids, today),
  ]);
  return wallets.flatMap((w) => {
    const bal = balances.get(w.id);
    return bal ? [walletViewFrom(w, bal, keyCounts.get(w.id) ?? 0, use.get(w.id)!, currency)] : [];
  });
}

/** One page; `today` is the Korean date (the key counts, and the month whose spend is shown). */
export async function listWallets(db: Db, req: WalletPageRequest, today: string, currency: DisplayCurrency | null): Promise<WalletPage> {
  // One more than asked tells whether another page follows without a count of the whole table.
  if (req.sort) {
    const rows = await readSortedWallets(db, {
      sort: req.sort.by,
      descending: req.sort.descending,
      limit: req.limit + 1,
      offset: req.offset,
      today,
    });
    const hasMore = rows.length > req.limit;
    const data = await viewsOf(db, rows.slice(0, req.limit), today, currency);
    return { data, has_more: hasMore, next_cursor: hasMore ? encode(['sort', sortText(req.sort), req.offset + req.limit]) : null };
  }
  const rows = await readWalletPage(db, req.limit + 1, req.after);
  const page = rows.slice(0, req.limit);
  const data = await viewsOf(
    db,
    page.map((r) => r.wallet),
    today,
    currency,
  );
  const hasMore = rows.length > req.limit;
  const last = page[page.length - 1]?.position;
  return { data, has_more: hasMore, next_cursor: hasMore && last ? encode([last.createdAt, last.id]) : null };
}
